"""Where a model's template and tokenizer come from: tokenizer files, model folders and the local
Hugging Face cache, the embedded default (tokens.py), GGUF models (gguf.py, gguf_tokenizer.py) and
the Ollama store (ollama.py). A tokenizer is built from its file by backend.py, here or in a forked
helper (tokenizer_process.py), and its encodings are remembered across runs (token_memo.py) or
served from an index of its vocabulary without loading it (token_index.py). Nothing here reads
the settings or the sources layer: callers pass paths and specs."""
