"""What a deletion would leave stuck, before anyone deletes: kfin preflight of one object, teardowns of manifests
and Helm releases in the order their tools send the deletes, and kfin guard's answer to a DELETE."""
