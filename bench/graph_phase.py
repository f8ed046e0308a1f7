"""The owner graph of a whole snapshot: load, build, analyse, render the tree (as `kfin graph` prints it to
a pipe or for a large graph: kfin.render.graph.plain_tree), and the DOT and JSON exports.

Run as its own process (`python -m bench.graph_phase SNAPSHOT`) so that its peak RSS is its own; prints
one JSON object of timings (seconds, the best of three runs) on stdout. The same kfin functions
`kfin graph` uses.
"""

import json
import resource
import sys
import time


def main(path: str) -> int:
    clock = time.perf_counter
    timings = {}
    start = clock()
    from kfin.core.explain import owners as g
    from kfin.api import inventory
    from kfin.render import graph as rg
    from kfin.core.explain.causes import blocker_line, explain_cached
    from kfin.core.read.facts import Facts

    facts = Facts(inventory.load(path))
    objects = facts.everything(None)
    timings["load"] = clock() - start

    def best(phase: str, work):
        """The fastest of three runs: one run of a few milliseconds is mostly noise."""
        result = None
        for _ in range(3):
            start = clock()
            result = work()
            timings[phase] = min(timings.get(phase, float("inf")), clock() - start)
        return result

    graph = best("build", lambda: g.build(objects, facts.inventory.observed_at, facts.listed_kinds(),
                                          lambda o: blocker_line(explain_cached(o, facts))))
    found, chains = best("analyse", lambda: (g.problems(graph), rg.chains(graph)))

    tree_lines = best("tree", lambda: rg.plain_tree(graph).count("\n"))
    dot = best("dot", lambda: rg.to_dot(graph))
    exported = best("json", lambda: rg.to_json(graph))

    print(json.dumps({"objects": len(objects), "nodes": graph.number_of_nodes(), "edges": graph.number_of_edges(),
                      "problems": len(found), "chains": len(chains), "tree_lines": tree_lines,
                      "dot_bytes": len(dot), "json_bytes": len(exported), "seconds": timings,
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
    return 0


if __name__ == "__main__":
    from kfin.util.gcpause import paused_gc

    with paused_gc(freeze_after=False):  # as every kfin command runs (kfin.commands.app.main)
        sys.exit(main(sys.argv[1]))
