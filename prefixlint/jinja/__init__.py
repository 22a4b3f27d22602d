"""The Jinja frontend: a Hugging Face-faithful environment, a tracer, and the analyses on renders."""
