"""Tests of `generators.metrics` on small hand-made graphs whose metrics were worked out by
hand (see each test), and of the `tvtv stats` command."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from generators.emit import emit
from generators.graph import CALL, GET_ITEM, Graph, Node, TensorSpec
from generators.importer import import_module
from generators.metrics import (all_metrics, default_corpus, hirgen_coverage,
                                isra_graph_metrics, isra_metrics, op_graph)
from tvtv.cli import app

F = "float32"
S23, S21, S25, S4 = (TensorSpec(s, F) for s in ((2, 3), (2, 1), (2, 5), (4,)))
CORPUS = {"relax.exp": (1,), "relax.add": (2,), "relax.multiply": (2,), "relax.split": (1,),
          "relax.concat": (1, 2, 3, 4, 5), "relax.nn.relu": (1,)}  # n_C = 6, relu unused by G1


def g1() -> Graph:
    """x -> a = exp(x); b = add(a, x); c = multiply(a, b); s = split(c, 3, axis=1);
    d = concat(s[0], s[1], x, axis=1); outputs d, b.

    Edges: a->b, a->c, b->c, c->s, s->d. Out-degrees: a 2, b 1+1 (output), c 1, s 1, d 0+1.
    In-degrees: 1, 2, 2, 1, 3."""
    return Graph({"x": S23}, [
        Node("a", "relax.exp", ["x"], {}, S23),
        Node("b", "relax.add", ["a", "x"], {}, S23),
        Node("c", "relax.multiply", ["a", "b"], {}, S23),
        Node("s", "relax.split", ["c"], {"indices_or_sections": 3, "axis": 1}, (S21, S21, S21)),
        Node("s0", GET_ITEM, ["s"], {"index": 0}, S21),
        Node("s1", GET_ITEM, ["s"], {"index": 1}, S21),
        Node("d", "relax.concat", ["s0", "s1", "x"], {"axis": 1}, S25),
    ], ["d", "b"])


def g2() -> Graph:
    """y -> e = exp(y); f = relu(e); outputs f, e (exp: out-degree 1 + 1)."""
    return Graph({"y": S4}, [Node("e", "relax.exp", ["y"], {}, S4),
                             Node("f", "relax.nn.relu", ["e"], {}, S4)], ["f", "e"])


def g3() -> Graph:
    """z -> exp(z), the output (exp: out-degree 1)."""
    return Graph({"z": S4}, [Node("e", "relax.exp", ["z"], {}, S4)], ["e"])


def test_degrees_and_edges_of_g1():
    calls = {c.node.name: c for c in op_graph(g1())}
    assert {k: c.in_degree for k, c in calls.items()} == {"a": 1, "b": 2, "c": 2, "s": 1, "d": 3}
    assert {k: c.out_degree for k, c in calls.items()} == {"a": 2, "b": 2, "c": 1, "s": 1, "d": 1}
    assert sorted(b.node.name for b in calls["a"].succ) == ["b", "c"]


def test_isra_graph_level_metrics_of_g1():
    # NOP: (exp,add) (exp,multiply) (add,multiply) (multiply,split) (split,concat) = 5
    # NTR: (exp,add,multiply) (exp,multiply,split) (add,multiply,split)
    #      (multiply,split,concat) = 4
    # NSA: input shapes {(2,3), (2,1)} = 2 + attribute sets {split's, concat's} = 2 -> 4
    assert isra_graph_metrics(g1()) == {"NOO": 5, "NOT": 5, "NOP": 5, "NTR": 4, "NSA": 4}
    assert isra_graph_metrics(g2()) == {"NOO": 2, "NOT": 2, "NOP": 1, "NTR": 0, "NSA": 1}


def test_isra_op_level_metrics_of_g1():
    m = isra_metrics([g1()], CORPUS)
    assert m["OTC"] == pytest.approx(5 / 6)
    assert m["IDC"] == pytest.approx((1 + 1 + 1 + 1 + 1 / 5) / 6)  # concat: 1 of 5 degrees
    assert m["ODC"] == pytest.approx(5 / 6)  # one distinct out-degree per occurring op
    assert m["SEC"] == pytest.approx((2 + 1 + 1 + 1 + 0) / 6 / 6)
    # DEC: exp {(add,multiply), (multiply,split)}, add {(multiply,split)},
    #      multiply {(split,concat)}, split {} -> 4 triples
    assert m["DEC"] == pytest.approx(4 / 36 / 6)
    # SAC: exp 0+1, add 0+1, multiply 0+1, split 1+1, concat 1+2 -> 8
    assert m["SAC"] == pytest.approx(8 / 6)


def test_isra_metrics_over_a_set():
    m = isra_metrics([g1(), g2()], CORPUS)
    assert m["OTC"] == 1.0
    assert m["IDC"] == pytest.approx((4 + 1 / 5 + 1) / 6)
    assert m["ODC"] == pytest.approx(6 / 6)  # g2's exp again has out-degree 2
    assert m["SEC"] == pytest.approx((3 + 1 + 1 + 1) / 36)  # exp -> {add, multiply, relu}
    assert m["DEC"] == pytest.approx(4 / 216)
    assert m["SAC"] == pytest.approx((8 + 1 + 1) / 6)  # exp also reads (4,); relu reads (4,)
    assert (m["NOO"], m["NOT"], m["NOP"], m["NTR"], m["NSA"]) == (3.5, 3.5, 3.0, 2.0, 2.5)
    # exp with out-degrees {2, 1}
    assert isra_metrics([g1(), g3()], CORPUS)["ODC"] == pytest.approx(6 / 6)
    # ops outside the corpus are ignored by the op-level metrics only
    small = isra_metrics([g1()], {"relax.exp": (1,)})
    assert small["OTC"] == 1.0 and small["SEC"] == 0.0 and small["NOO"] == 5


def test_hirgen_coverage():
    # g1: (op, f32) for 5 ops; shapes exp/add/multiply (2,3), split (2,1), concat (2,5)
    assert hirgen_coverage([g1()]) == {"op_dtype": 5, "op_shape": 5, "op_edge": 5}
    # g2 adds (relu, f32), shapes (exp,(4,)) (relu,(4,)), edge (exp, relu)
    assert hirgen_coverage([g1(), g2()]) == {"op_dtype": 6, "op_shape": 7, "op_edge": 6}
    i8 = Graph({"x": TensorSpec((2,), "int8")},
               [Node("a", "relax.exp", ["x"], {}, TensorSpec((2,), "int8"))], ["a"])
    assert hirgen_coverage([g1(), i8])["op_dtype"] == 6


def test_metrics_follow_calls_of_global_functions():
    """main: y = f(x); r = relu(y); f: e = exp(p). The exp -> relu edge crosses the call."""
    f = Graph({"p": S4}, [Node("e", "relax.exp", ["p"], {}, S4)], ["e"])
    main = Graph({"x": S4}, [Node("y", CALL, ["x"], {"func": "f"}, S4),
                             Node("r", "relax.nn.relu", ["y"], {}, S4)], ["r"],
                 functions={"f": f})
    assert isra_graph_metrics(main) == {"NOO": 2, "NOT": 2, "NOP": 1, "NTR": 0, "NSA": 1}
    assert hirgen_coverage([main])["op_edge"] == 1


def test_metrics_of_an_imported_module_match():
    back = import_module(emit(g1()))
    assert isra_metrics([back], CORPUS) == pytest.approx(isra_metrics([g1()], CORPUS))
    assert hirgen_coverage([back]) == hirgen_coverage([g1()])


def test_default_corpus_and_all_metrics():
    corpus = default_corpus()
    assert corpus["relax.add"] == (2,) and corpus["relax.concat"] == (1, 2, 3, 4, 5)
    m = all_metrics([g1(), g2()])
    assert m["graphs"] == 2 and m["OTC"] == pytest.approx(6 / len(corpus))
    assert {"op_dtype", "op_shape", "op_edge", "NSA"} <= set(m)


# -- tvtv stats ------------------------------------------------------------------------------------
runner = CliRunner()


def test_stats_cli_on_generated_isra_graphs(tmp_path: Path):
    out = tmp_path / "g"
    r = runner.invoke(app, ["generate", "--generator", "isra", "-n", "20", "--seed", "0",
                            "--out", str(out)])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["stats", str(out), "--json", str(tmp_path / "m.json")])
    assert r.exit_code == 0, r.output
    assert "NOO" in r.stdout and "op_edge" in r.stdout
    data = json.loads((tmp_path / "m.json").read_text())
    assert data["modules"] == 20 and data["skipped"] == []
    # the same numbers as measuring the imported modules directly
    from tvtv.ir.tvm_bridge import load_module
    graphs = [import_module(load_module(p)) for p in sorted(out.glob("*.py"))]
    assert data["metrics"]["NOO"] == pytest.approx(sum(g.num_ops for g in graphs) / 20)
    assert 10 <= data["metrics"]["NOO"] <= 30  # `generate`'s default 10..30 ops
    assert data["metrics"] == pytest.approx(all_metrics(graphs))


def test_stats_cli_skips_a_malformed_file_or_fails_in_strict_mode(tmp_path: Path):
    r = runner.invoke(app, ["generate", "--generator", "isra", "-n", "2", "--seed", "1",
                            "--min-ops", "1", "--max-ops", "5", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    (tmp_path / "broken.py").write_text("@I.ir_module\nclass Module:\n    def (\n")
    r = runner.invoke(app, ["stats", str(tmp_path), "--json", str(tmp_path / "m.json")])
    assert r.exit_code == 0, r.output
    warnings = [l for l in r.stderr.splitlines() if l.strip()]
    assert len(warnings) == 1 and warnings[0].startswith("tvtv: warning:")
    assert "broken.py" in warnings[0]
    data = json.loads((tmp_path / "m.json").read_text())
    assert data["modules"] == 2 and data["skipped"][0]["file"] == "broken.py"
    r = runner.invoke(app, ["stats", str(tmp_path), "--strict"])
    assert r.exit_code == 3
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("tvtv: error:") and "broken.py" in lines[0]


def test_stats_cli_bad_folders(tmp_path: Path):
    r = runner.invoke(app, ["stats", str(tmp_path / "missing")])
    assert r.exit_code == 3 and "not a folder" in r.stderr
    r = runner.invoke(app, ["stats", str(tmp_path)])
    assert r.exit_code == 3 and "no TVMScript" in r.stderr
    (tmp_path / "junk.py").write_text("not tvmscript at all (\n")
    r = runner.invoke(app, ["stats", str(tmp_path)])
    assert r.exit_code == 3 and "none of the 1 files" in r.stderr


def test_gencog_diversity_is_included_when_available():
    """GenCoG's two metrics come from generators.gencog.diversity (written by the GenCoG
    helper); all_metrics reports exactly its numbers."""
    from generators.metrics import gencog_diversity
    gs = [g1(), g2()]
    if gencog_diversity(gs) is None:
        pytest.skip("generators.gencog.diversity not available")
    from generators.gencog import diversity
    m = all_metrics(gs)
    assert m["vertex_div"] == pytest.approx(diversity.vertex_diversity(gs)["mean"])
    assert m["edge_div"] == pytest.approx(diversity.edge_diversity(gs))


def test_gencog_diversity_covers_functions_of_hirgen_and_typed_modules():
    """V-div and E-div count op calls inside private/nested functions and If branches too."""
    import warnings

    import generators
    from generators.gencog.diversity import edge_diversity, vertex_diversity
    from generators.importer import import_module
    graphs = generators.generate_graphs("hirgen", 2, 0, 10, 20)
    graphs += [import_module(m) for m in generators.generate_modules("typed", 2, 0, 10, 20)]
    assert any(g.functions for g in graphs), "expected global functions in these graphs"
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # gencog_diversity must not leave the metrics out
        from generators.metrics import gencog_diversity
        div = gencog_diversity(graphs)
    assert div is not None
    assert vertex_diversity(graphs)["mean"] > 0
    assert edge_diversity(graphs) > 0
