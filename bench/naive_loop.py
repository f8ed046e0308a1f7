"""What users write today instead of kfin: the official Python client, every listable resource type
listed one after another with full objects, Terminating ones picked out in Python.

Prints the Terminating objects as JSON lines ({"kind", "namespace", "name"}) on stdout.
Usage: python bench/naive_loop.py KUBECONFIG [CONTEXT]
"""

import json
import sys

from kubernetes import config, dynamic


def main() -> int:
    kubeconfig = sys.argv[1]
    context = sys.argv[2] if len(sys.argv) > 2 else None
    client = dynamic.DynamicClient(config.new_client_from_config(config_file=kubeconfig, context=context))
    for resource in client.resources.search():
        if "list" not in (resource.verbs or []) or "/" in (resource.name or "") or resource.kind.endswith("List"):
            continue
        try:
            items = resource.get().items
        except Exception as error:  # an API that cannot be listed should not end the scan
            print(f"skipped {resource.group_version} {resource.name}: {type(error).__name__}", file=sys.stderr)
            continue
        for obj in items:
            if obj.metadata.deletionTimestamp:
                print(json.dumps({"kind": resource.kind, "namespace": obj.metadata.namespace,
                                  "name": obj.metadata.name}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
