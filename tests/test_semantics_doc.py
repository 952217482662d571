"""docs/semantics.md is generated from the encoders; it must be current and complete."""
from __future__ import annotations

from pathlib import Path

from tvtv.encode import registry
from tvtv.semantics import semantics_markdown, semantics_rows

DOC = Path(__file__).resolve().parents[1] / "docs" / "semantics.md"


def test_every_encoder_documents_its_semantics():
    undocumented = [op for op, text in semantics_rows() if text == "(undocumented)"]
    assert not undocumented, f"encoders without a semantics docstring: {undocumented}"


def test_semantics_doc_is_current():
    assert DOC.read_text() == semantics_markdown(), "run `make docs` to regenerate docs/semantics.md"


def test_required_ops_are_encoded():
    required = """add subtract multiply divide maximum minimum power equal less greater where clip
    nn.relu nn.gelu nn.silu sigmoid tanh nn.softmax nn.log_softmax astype reshape permute_dims
    expand_dims squeeze flatten concat split strided_slice take broadcast_to tile repeat flip
    sum mean max min prod variance argmax argmin matmul nn.conv1d nn.conv2d nn.max_pool2d
    nn.avg_pool2d nn.adaptive_avg_pool2d nn.layer_norm nn.batch_norm nn.group_norm nn.pad""".split()
    missing = [op for op in required if f"relax.{op}" not in registry.supported_ops()]
    assert not missing, missing
