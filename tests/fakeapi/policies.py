"""Admission policies. MutatingAdmissionPolicies (mutate: kube-apiserver's
staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/mutating, its failure message as the real tier gave it) on
every CREATE and UPDATE (a DELETE's are not run here), before the mutating webhooks. ValidatingAdmissionPolicies as
kube-apiserver enforces them on UPDATE (and PATCH), and on the namespace controller's DELETEs of a namespace's
content and the garbage collector's of dependents, as their ServiceAccounts (tests/fakeapi/controllers.py): a
binding with validationActions Deny (or Warn: the failed validation's message as a Warning header, "Validation
failed for ValidatingAdmissionPolicy '<p>' with binding '<b>': <message>"), its policy's matchConstraints and the
binding's matchResources (rules, exclusions, namespace and object selectors), matchConditions, then each validation;
a false one denies the request with 422 Invalid and kube-apiserver's message. No capture covers it: this follows the
Kubernetes source (staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating) and its documentation's
example output.

Simplified: CEL through the `cel` package (common-expression-language) with object, oldObject and request
(operation, namespace, name, userInfo.username); no params, no authorizer, no variables (a ValidatingAdmissionPolicy's); an expression that does not
evaluate counts as a failure (failurePolicy Fail) or is skipped (Ignore). Only requests to the API are admitted: the
fake's own controllers write around admission.
"""

import copy

from kfin.util.celobjects import as_maps

from . import status as st
from .patch import PatchError, apply_json_patch
from .webhooks import rule_matches, selector_matches

GROUP = "admissionregistration.k8s.io"


def _matches(resources: dict | None, operation: str, rt, subresource: str, ns_labels: dict, labels: dict,
             namespaced: bool) -> bool:
    if not resources:
        return True
    rules = resources.get("resourceRules")
    if rules is not None and not any(rule_matches(r, operation, rt, subresource) for r in rules):
        return False
    if any(rule_matches(r, operation, rt, subresource) for r in resources.get("excludeResourceRules") or []):
        return False
    if namespaced and not selector_matches(resources.get("namespaceSelector"), ns_labels):
        return False
    return selector_matches(resources.get("objectSelector"), labels)


def admit(cluster, rt, operation: str, old: dict, new: dict | None, subresource: str, user: str = ""):
    """Raise what kube-apiserver answers when a bound policy denies the request. A DELETE has no object (null
    in CEL), its oldObject is the object deleted; `user` is request.userInfo.username."""
    if rt.group == GROUP or (GROUP, "validatingadmissionpolicies") not in cluster.types:
        return
    import cel

    policies = {p["metadata"]["name"]: p for p in cluster.list(cluster.types[(GROUP, "validatingadmissionpolicies")],
                                                                 None)}
    meta = (new if new is not None else old).get("metadata") or {}
    namespace = meta.get("namespace") or ""
    ns = cluster.find(cluster.types[("", "namespaces")], "", namespace) if namespace else None
    ns_labels = ((ns or {}).get("metadata") or {}).get("labels") or {}
    labels = meta.get("labels") or {}
    variables = {"object": new, "oldObject": old,
                 "request": {"operation": operation, "namespace": namespace, "name": meta.get("name", ""),
                             "userInfo": {"username": user}}}
    for binding in cluster.list(cluster.types[(GROUP, "validatingadmissionpolicybindings")], None):
        spec = binding.get("spec") or {}
        policy = policies.get(spec.get("policyName", ""))
        actions = spec.get("validationActions") or []
        if policy is None or not {"Deny", "Warn"} & set(actions):
            continue
        pspec = policy.get("spec") or {}
        if not all(_matches(r, operation, rt, subresource, ns_labels, labels, rt.namespaced)
                   for r in (pspec.get("matchConstraints"), spec.get("matchResources"))):
            continue
        fail_closed = (pspec.get("failurePolicy") or "Fail") == "Fail"
        try:
            if not all(cel.evaluate(c["expression"], variables) is True for c in pspec.get("matchConditions") or []):
                continue
            failed = next((v for v in pspec.get("validations") or []
                           if cel.evaluate(v["expression"], variables) is not True), None)
        except (ValueError, TypeError, RuntimeError) as error:
            if not fail_closed:
                continue
            failed = {"message": f"expression evaluation failed: {error}"}
        if failed is None:
            continue
        message = failed.get("message") or f"failed expression: {failed.get('expression')}"
        if "Warn" in actions:  # a Warning header, denied or not (policy/validating/dispatcher.go)
            text = (f"Validation failed for ValidatingAdmissionPolicy '{policy['metadata']['name']}' with binding "
                    f"'{binding['metadata']['name']}': {message}")
            header = '299 - "' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
            if header not in cluster.warnings:
                cluster.warnings.append(header)
        if "Deny" not in actions:
            continue
        name = meta.get("name", "")
        # admission.NewForbidden's message ("is forbidden"), with the code and reason of the denial (422 Invalid
        # by default): staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating/dispatcher.go, and the
        # real tier's answer to a denied DELETE
        raise st.failure(422, "Invalid", f'{rt.name} "{name}" is forbidden: ValidatingAdmissionPolicy '
                         f"'{policy['metadata']['name']}' with binding '{binding['metadata']['name']}' denied "
                         f"request: {message}", {"name": name, "group": rt.group, "kind": rt.name, "causes": [
                             {"message": f"ValidatingAdmissionPolicy '{policy['metadata']['name']}' with binding "
                                         f"'{binding['metadata']['name']}' denied request: {message}"}]})


def mutate(cluster, rt, operation: str, old: dict | None, new: dict, subresource: str, user: str = "") -> dict:
    """The object after every bound MutatingAdmissionPolicy (admissionregistration.k8s.io/v1, GA in 1.36), in the
    order of their bindings' names: the policy's matchConstraints and the binding's matchResources, its
    variables and matchConditions (CEL, over object, oldObject, request and variables), then each mutation in
    turn, a JSONPatch (the list of JSONPatch objects its expression makes, applied) or an ApplyConfiguration (the
    object its expression makes, merged as server-side apply merges it: maps field by field, metadata.finalizers
    a set, other lists replaced). An expression that does not evaluate or a patch that does not apply, with
    failurePolicy Fail, refuses the request as v1.36.2 does on the real tier: 403 Invalid, "policy '<p>' with
    binding '<b>' denied request: <error>"; Ignore skips the policy. Simplified: no params, no reinvocation, and
    CEL object construction (`JSONPatch{...}`, `Object{...}`) evaluated as the map literal it stands for
    (kfin.util.celobjects, as kfin evaluates it: the `cel` package builds no objects)."""
    if rt.group == GROUP or (GROUP, "mutatingadmissionpolicies") not in cluster.types:
        return new
    policies = {p["metadata"]["name"]: p for p in cluster.list(cluster.types[(GROUP, "mutatingadmissionpolicies")],
                                                                 None)}
    if not policies:
        return new
    import cel

    meta = new.get("metadata") or {}
    namespace = meta.get("namespace") or ""
    ns = cluster.find(cluster.types[("", "namespaces")], "", namespace) if namespace else None
    ns_labels = ((ns or {}).get("metadata") or {}).get("labels") or {}
    request = {"operation": operation, "namespace": namespace, "name": meta.get("name", ""),
               "userInfo": {"username": user}}
    bindings = cluster.list(cluster.types[(GROUP, "mutatingadmissionpolicybindings")], None)
    for binding in sorted(bindings, key=lambda b: b["metadata"]["name"]):
        spec = binding.get("spec") or {}
        policy = policies.get(spec.get("policyName", ""))
        if policy is None:
            continue
        pspec = policy.get("spec") or {}
        labels = (new.get("metadata") or {}).get("labels") or {}
        if not all(_matches(r, operation, rt, subresource, ns_labels, labels, rt.namespaced)
                   for r in (pspec.get("matchConstraints"), spec.get("matchResources"))):
            continue
        try:
            variables = {"object": new, "oldObject": old, "request": request, "variables": {}}
            for variable in pspec.get("variables") or []:
                variables["variables"][variable["name"]] = cel.evaluate(as_maps(variable["expression"]), variables)
            if not all(cel.evaluate(as_maps(c["expression"]), variables) is True
                       for c in pspec.get("matchConditions") or []):
                continue
            for mutation in pspec.get("mutations") or []:
                variables["object"] = new
                if mutation.get("patchType") == "JSONPatch":
                    operations = cel.evaluate(as_maps(mutation["jsonPatch"]["expression"]), variables)
                    try:
                        new = apply_json_patch(new, operations)
                    except PatchError as error:
                        raise ValueError(f"JSON Patch: {error}") from None
                elif mutation.get("patchType") == "ApplyConfiguration":
                    new = _applied(new, cel.evaluate(as_maps(mutation["applyConfiguration"]["expression"]), variables))
                else:
                    raise ValueError(f"unsupported patchType {mutation.get('patchType')!r}")
        except (ValueError, TypeError, RuntimeError, KeyError) as error:
            if (pspec.get("failurePolicy") or "Fail") == "Ignore":
                continue
            said = (f"policy '{policy['metadata']['name']}' with binding '{binding['metadata']['name']}' denied "
                    f"request: {error}")
            raise st.failure(403, "Invalid", said, {"name": meta.get("name", ""), "kind": rt.name,
                                                    "causes": [{"message": said}]})
    return new


SET_LISTS = {("metadata", "finalizers")}  # listType set in ObjectMeta's schema: applied items are joined


def _applied(current, applied, path=()):
    """An ApplyConfiguration merged into the object (server-side apply's merge, for what the scenarios apply)."""
    if isinstance(current, dict) and isinstance(applied, dict):
        out = dict(current)
        for key, value in applied.items():
            out[key] = _applied(current.get(key), value, (*path, key))
        return out
    if path in SET_LISTS and isinstance(current, list) and isinstance(applied, list):
        return current + [item for item in applied if item not in current]
    return copy.deepcopy(applied)
