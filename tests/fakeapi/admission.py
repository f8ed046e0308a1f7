"""What admission plugins and defaulting do to an object on create, as the real server does."""

PVC_PROTECTION = "kubernetes.io/pvc-protection"
PV_PROTECTION = "kubernetes.io/pv-protection"
VAC_PROTECTION = "kubernetes.io/vac-protection"  # also the StorageObjectInUseProtection plugin's (1.34+)
# The PodGroupProtection plugin's, on every PodGroup created while GenericWorkload is on (1.36,
# plugin/pkg/admission/scheduling/podgroupprotection)
PODGROUP_PROTECTION = "scheduling.k8s.io/podgroup-protection"
# Fields Go writes even when unset (no omitempty, or a struct: metav1.MicroTime's zero is null), in each events
# API's view; the others are left out when empty. Captures 25-26 (causes/) show both views of one Event.
EVENT_ALWAYS = {("", "events"): {"eventTime": None, "reportingComponent": "", "reportingInstance": ""},
                ("events.k8s.io", "events"): {"eventTime": None}}


WEBHOOK_DEFAULTS = {"failurePolicy": "Fail", "matchPolicy": "Equivalent", "namespaceSelector": dict,
                    "objectSelector": dict, "timeoutSeconds": 10}


def _add_finalizer(meta: dict, name: str):
    finalizers = meta.setdefault("finalizers", [])
    if name not in finalizers:
        finalizers.append(name)


def admit_create(cluster, rt, obj: dict):
    meta = obj["metadata"]
    for field, value in EVENT_ALWAYS.get(rt.key, {}).items():  # how Go writes an Event's unset fields
        obj.setdefault(field, value)
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
    elif rt.key == ("storage.k8s.io", "volumeattributesclasses"):
        _add_finalizer(meta, VAC_PROTECTION)
    elif rt.key == ("scheduling.k8s.io", "podgroups"):
        _add_finalizer(meta, PODGROUP_PROTECTION)
        obj.setdefault("spec", {}).setdefault("disruptionMode", "Pod")
        obj.setdefault("status", {})
    elif rt.key == ("", "namespaces"):
        meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta["name"]
        obj["spec"] = {"finalizers": ["kubernetes"]}
    elif rt.key == ("", "pods"):  # the ServiceAccount and DefaultTolerationSeconds plugins, and defaulting
        spec = obj.setdefault("spec", {})
        spec.setdefault("serviceAccountName", "default")
        spec.setdefault("serviceAccount", spec["serviceAccountName"])
        spec.setdefault("terminationGracePeriodSeconds", 30)
        tolerations = spec.setdefault("tolerations", [])
        for taint in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
            if not any(t.get("key") == taint and t.get("effect") in ("NoExecute", None) for t in tolerations):
                tolerations.append({"key": taint, "operator": "Exists", "effect": "NoExecute",
                                    "tolerationSeconds": 300})
    elif rt.key == ("apiextensions.k8s.io", "customresourcedefinitions"):
        names = obj.setdefault("spec", {}).setdefault("names", {})
        names.setdefault("listKind", names.get("kind", "") + "List")
        obj["spec"].setdefault("conversion", {"strategy": "None"})
        obj["status"] = {"conditions": None, "acceptedNames": {"plural": "", "kind": ""},
                         "storedVersions": [v["name"] for v in obj["spec"].get("versions", []) if v.get("storage")]}
    elif rt.group == "admissionregistration.k8s.io" and rt.name.endswith("webhookconfigurations"):
        for webhook in obj.get("webhooks") or []:
            for key, value in WEBHOOK_DEFAULTS.items():
                webhook.setdefault(key, value() if callable(value) else value)
            for rule in webhook.get("rules") or []:
                rule.setdefault("scope", "*")
    if meta.get("finalizers") == []:
        del meta["finalizers"]
