"""Write a tiny random-weights Qwen2 model folder for tests/test_vllm_server.py: 2 layers, hidden 128,
fp32 (~80 MB, most of it the 151,936-token embedding), beside the corpus's real Qwen3 tokenizer and
chat template, so that the server tokenizes and renders as Qwen3 does. Nothing is downloaded.

Run with the vLLM venv's python (it needs torch and transformers):

    VENV/bin/python tests/vllm_tiny_model.py CORPUS/tokenizers/qwen3 OUT_DIR
"""

from __future__ import annotations

import gzip
import shutil
import sys
from pathlib import Path


def write(tokenizer_dir: Path, out: Path) -> Path:
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)  # the same weights, so the same replies, on every run
    config = Qwen2Config(
        vocab_size=151_936,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        head_dim=64,
        max_position_embeddings=8192,
        tie_word_embeddings=True,
        torch_dtype="float32",
        bos_token_id=151643,
        eos_token_id=151645,
    )
    out.mkdir(parents=True, exist_ok=True)
    Qwen2ForCausalLM(config).save_pretrained(out, safe_serialization=True)
    with (
        gzip.open(tokenizer_dir / "tokenizer.json.gz", "rb") as src,
        (out / "tokenizer.json").open("wb") as dst,
    ):
        shutil.copyfileobj(src, dst)
    for name in ("tokenizer_config.json", "chat_template.jinja"):
        shutil.copyfile(tokenizer_dir / name, out / name)
    return out


if __name__ == "__main__":
    print(write(Path(sys.argv[1]), Path(sys.argv[2])))
