"""What admission plugins and defaulting do to an object on create, as the real server does."""

PVC_PROTECTION = "kubernetes.io/pvc-protection"
PV_PROTECTION = "kubernetes.io/pv-protection"


def _add_finalizer(meta: dict, name: str):
    finalizers = meta.setdefault("finalizers", [])
    if name not in finalizers:
        finalizers.append(name)


def admit_create(cluster, rt, obj: dict):
    meta = obj["metadata"]
    if rt.key == ("", "persistentvolumeclaims"):  # StorageObjectInUseProtection plugin
        _add_finalizer(meta, PVC_PROTECTION)
        obj.setdefault("spec", {}).setdefault("volumeMode", "Filesystem")
    elif rt.key == ("", "persistentvolumes"):
        _add_finalizer(meta, PV_PROTECTION)
        obj.setdefault("spec", {}).setdefault("volumeMode", "Filesystem")
        obj["spec"].setdefault("persistentVolumeReclaimPolicy", "Retain")
        if "hostPath" in obj["spec"]:
            obj["spec"]["hostPath"].setdefault("type", "")
        obj["status"]["lastPhaseTransitionTime"] = cluster.now()
    elif rt.key == ("", "namespaces"):
        meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta["name"]
        obj["spec"] = {"finalizers": ["kubernetes"]}
    elif rt.key == ("", "pods"):  # the ServiceAccount admission plugin
        spec = obj.setdefault("spec", {})
        spec.setdefault("serviceAccountName", "default")
        spec.setdefault("serviceAccount", spec["serviceAccountName"])
    elif rt.key == ("apiextensions.k8s.io", "customresourcedefinitions"):
        names = obj.setdefault("spec", {}).setdefault("names", {})
        names.setdefault("listKind", names.get("kind", "") + "List")
        obj["spec"].setdefault("conversion", {"strategy": "None"})
        obj["status"] = {"conditions": None, "acceptedNames": {"plural": "", "kind": ""},
                         "storedVersions": [v["name"] for v in obj["spec"].get("versions", []) if v.get("storage")]}
    if meta.get("finalizers") == []:
        del meta["finalizers"]
