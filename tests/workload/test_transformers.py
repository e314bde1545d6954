"""The transformer layers of the zoo (npusched.workload.transformers) against published model
sizes and MACs counted by hand from the shapes."""

from __future__ import annotations

import pytest

from npusched.common.errors import InputError
from npusched.workload.transformers import encoder_layer, llama_layer
from npusched.workload.zoo import load_network, program_from_dict


def _encoder_macs(t: int, d: int, ff: int) -> int:
    """Q, K, V, O projections, the two attention matmuls and the MLP."""
    return 4 * t * d * d + 2 * t * t * d + 2 * t * d * ff


def _encoder_params(d: int, ff: int) -> int:
    return 4 * (d * d + d) + d * ff + ff + ff * d + d + 2 * 2 * d


@pytest.mark.parametrize(("name", "t"), [("bert-base-128", 128), ("bert-base-512", 512),
                                          ("vit-b16", 197), ("gpt2-small", 1024)])
def test_encoder_layers_by_hand(name, t):
    prog = load_network(name)
    assert prog.macs() == _encoder_macs(t, 768, 3072)
    assert prog.params() == _encoder_params(768, 3072)


def test_whole_models_match_their_published_sizes():
    layer = load_network("bert-base-128").params()
    # + word (30 522), position (512), type (2) embeddings, their LayerNorm, the pooler
    assert 12 * layer + (30522 + 512 + 2) * 768 + 2 * 768 + 768 * 768 + 768 == 109_482_240
    # GPT-2 small: + token (50 257) and position (1024) embeddings, the final LayerNorm
    assert 12 * load_network("gpt2-small").params() + (50257 + 1024) * 768 + 2 * 768 == \
        124_439_808
    # ViT-B/16 without its classifier: + patch embedding, class token, positions, final LN
    vit = 12 * load_network("vit-b16").params() + 16 * 16 * 3 * 768 + 768 + 768 + 197 * 768 \
        + 2 * 768
    assert abs(vit - 86_000_000) <= 500_000
    # LLaMA-3-8B: + untied 128 256 x 4096 embedding and output, the final RMSNorm: 8.03 B
    llama = load_network("llama3-8b-prefill-256").params()
    assert 32 * llama + 2 * 128256 * 4096 + 4096 == 8_030_261_248


@pytest.mark.parametrize("t", [256, 1024, 4096])
def test_llama_prefill_macs_by_hand(t):
    d, kv, ff, heads, dh = 4096, 1024, 14336, 32, 128
    prog = load_network(f"llama3-8b-prefill-{t}")
    assert prog.macs() == t * (2 * d * d + 2 * d * kv + 3 * d * ff) + 2 * heads * t * t * dh


def test_llama_decode_reads_its_cache_from_dram():
    prog = load_network("llama3-8b-decode-4096")
    d, kv, ff, L = 4096, 1024, 14336, 4096
    assert prog.macs() == 2 * d * d + 2 * d * kv + 3 * d * ff + 2 * 32 * L * 128
    caches = [t for t in prog.tensors.values() if t.role == "cache"]
    assert sorted(t.elements for t in caches) == [8 * L * 128] * 2
    scores = next(op for op in prog.ops if op.name == "attn.scores")
    assert prog.tensors[scores.output].shape == (8, 4, 1, L)  # 4 query heads share a KV head


def test_builders_at_other_sizes_and_bad_files(tmp_path):
    small = encoder_layer("tiny", 8, 16, 2, 32, pre_norm=True)
    assert small.macs() == _encoder_macs(8, 16, 32)
    gqa = llama_layer("tiny-llama", 8, d=64, heads=8, kv_heads=2, d_ff=96)
    assert gqa.macs() == 8 * (2 * 64 * 64 + 2 * 64 * 16 + 3 * 64 * 96) + 2 * 8 * 8 * 8 * 8
    data = small.to_dict()
    data["ops"][1]["inputs"] = ["nowhere", data["ops"][1]["inputs"][1]]
    with pytest.raises(InputError, match="not an earlier tensor"):
        program_from_dict(data, tmp_path / "x.json")
    data["ops"][0]["inputs"] = ["x"]
    with pytest.raises(InputError, match="a norm takes its input and 1 or 2 parameters"):
        program_from_dict(data, tmp_path / "x.json")
    data["ops"][1]["kind"] = "conv"
    with pytest.raises(InputError, match="ops/1/kind"):
        program_from_dict(data, tmp_path / "x.json")
