"""A vocabulary-only GGUF file for the tokenizer references
(llama_tokens.py, spm_tokens.py): a one-block llama shape and no tensors,
which llama.cpp loads with `vocab_only=True`.
"""

import gguf


def write(path, add_tokenizer):
    """Writes `path`; `add_tokenizer(writer)` adds the vocabulary's keys."""
    w = gguf.GGUFWriter(path, "llama")
    w.add_context_length(256)
    w.add_embedding_length(64)
    w.add_block_count(1)
    w.add_feed_forward_length(128)
    w.add_head_count(4)
    w.add_head_count_kv(4)
    w.add_layer_norm_rms_eps(1e-5)
    add_tokenizer(w)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
