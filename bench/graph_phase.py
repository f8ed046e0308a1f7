"""The owner graph of a whole snapshot: load, build, analyse, render the tree and the DOT export.

Run as its own process (`python -m bench.graph_phase SNAPSHOT`) so that its peak RSS is its own; prints
one JSON object of timings (seconds) on stdout. The same kfin functions `kfin graph` uses.
"""

import io
import json
import resource
import sys
import time


def main(path: str) -> int:
    clock = time.perf_counter
    timings = {}
    start = clock()
    from kfin import graph as g
    from kfin import inventory
    from kfin import render_graph as rg
    from kfin.blockers import blocker_line
    from kfin.facts import Facts
    from rich.console import Console

    facts = Facts(inventory.load(path))
    objects = facts.everything(None)
    timings["load"] = clock() - start

    start = clock()
    graph = g.build(objects, facts.inventory.observed_at, facts.listed_kinds(), lambda o: blocker_line(o, facts))
    timings["build"] = clock() - start

    start = clock()
    found = g.problems(graph)
    chains = rg.chains(graph)
    timings["analyse"] = clock() - start

    start = clock()
    out = io.StringIO()
    Console(file=out, width=200, no_color=True, color_system=None, highlight=False).print(rg.tree(graph))
    timings["tree"] = clock() - start
    tree_lines = out.getvalue().count("\n")

    start = clock()
    dot = rg.to_dot(graph)
    timings["dot"] = clock() - start

    print(json.dumps({"objects": len(objects), "nodes": graph.number_of_nodes(), "edges": graph.number_of_edges(),
                      "problems": len(found), "chains": len(chains), "tree_lines": tree_lines,
                      "dot_bytes": len(dot), "seconds": timings,
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
    return 0


if __name__ == "__main__":
    from kfin.gcpause import paused_gc

    with paused_gc(freeze_after=False):  # as every kfin command runs (kfin.cli.main)
        sys.exit(main(sys.argv[1]))
