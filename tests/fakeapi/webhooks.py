"""Admission webhooks as kube-apiserver calls them.

A request that a Validating- or MutatingWebhookConfiguration matches (operation, group, version,
resource and subresource, scope; namespaceSelector against its namespace's labels; objectSelector
against the object's labels before or after the request) is sent to the webhook. The fake has no network behind
its Services, so a webhook backed by a Service fails to be called: with `failurePolicy: Fail` (the default) the
request answers 500 `failed calling webhook` (captures 12-16 of causes), with Ignore it goes on.
matchConditions of a webhook that cannot be called are not evaluated (as if they matched). The webhook
configurations themselves are never sent to a webhook, so that a broken one can always be deleted.

A webhook with a `clientConfig.url` is called for every operation it matches (CREATE, UPDATE, a PATCH as the
UPDATE it makes, DELETE), mutating and validating alike, as kube-apiserver's dispatchers call them (k8s.io/apiserver
pkg/admission/plugin/webhook/mutating and validating dispatcher.go), dry runs included (`dryRun: true` in the
request): its matchConditions first (CEL, over `request`, `object` and `oldObject`; a false one skips the
webhook), then a POST of an AdmissionReview v1 to the URL with `?timeout=Ns`, verified against its caBundle.
Mutating webhooks come first, one after another in the order of their configurations' names, each answer's JSON
Patch (`patchType: JSONPatch`, base64 `patch`) applied to the object before the next, before validation and before
it is stored or returned (tests/fakeapi/server.py, _admitted): a webhook that puts a removed finalizer back on an
object being deleted leaves its UPDATE accepted and unchanged, as the real tier answered (the finalizer was there
before: no new finalizer). Each answer's `warnings` becomes a `Warning: 299 - "text"` header of the response
(pkg/endpoints/filters/warning.go, k8s.io/apimachinery pkg/util/net NewWarningHeader: agent "-" for an empty one,
quotes and backslashes escaped, each text once, sent with a refusal too), and a refusal answers as v1.36.2 does on
the real tier (webhookerrors.ToStatusErr): `admission webhook "<name>" denied the request: <message>`, its code the
answer's (403 when none), no reason, no details.

The namespace controller's deletions of a namespace's content are admitted too (as DELETE, object by object:
tests/fakeapi/controllers.py), the garbage collector's of dependents, and its releases of them (as UPDATE).
Simplifications: the fake's other controllers write around admission; a CREATE is admitted as sent, before the
fake's defaulting and built-in plugins (kube-apiserver runs those first).
"""

import base64
import json
import ssl
import unicodedata
import urllib.error
import urllib.request
import uuid

from . import status as st
from .patch import PatchError, apply_json_patch

KINDS = ("mutatingwebhookconfigurations", "validatingwebhookconfigurations")
GROUP = "admissionregistration.k8s.io"


def _matches(values: list, wanted: str) -> bool:
    return "*" in (values or []) or wanted in (values or [])


def _resource_matches(resources: list, resource: str, subresource: str) -> bool:
    wanted = f"{resource}/{subresource}" if subresource else resource
    for entry in resources or []:
        name, _, sub = entry.partition("/")
        if entry == wanted or (not subresource and entry == "*"):
            return True
        if subresource and (entry == "*/*" or (name == "*" and sub == subresource) or (name == resource and sub == "*")):
            return True
    return False


def rule_matches(rule: dict, operation: str, rt, subresource: str) -> bool:
    scope = rule.get("scope") or "*"
    if scope != "*" and scope != ("Namespaced" if rt.namespaced else "Cluster"):
        return False
    return (_matches(rule.get("operations"), operation) and _matches(rule.get("apiGroups"), rt.group)
            and _matches(rule.get("apiVersions"), rt.version)
            and _resource_matches(rule.get("resources"), rt.name, subresource))


def selector_matches(selector: dict | None, labels: dict) -> bool:
    """A LabelSelector (matchLabels and matchExpressions); an empty one matches everything."""
    selector = selector or {}
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression.get("key"), expression.get("operator"), expression.get("values") or []
        present = key in labels
        if operator == "In" and (not present or labels[key] not in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def _call_error(cluster, hook: dict) -> str:
    """Why the webhook cannot be called from here (always: the fake has no backends)."""
    config = hook.get("clientConfig") or {}
    timeout = hook.get("timeoutSeconds") or 10
    service = config.get("service")
    if not service:
        return f'failed to call webhook: Post "{config.get("url", "")}?timeout={timeout}s": dial tcp: connection refused'
    name, namespace = service.get("name", ""), service.get("namespace", "")
    url = f"https://{name}.{namespace}.svc:{service.get('port') or 443}{service.get('path') or '/'}?timeout={timeout}s"
    if cluster.find(cluster.types[("", "services")], namespace, name) is None:
        reason = f'service "{name}" not found'
    else:
        reason = f'no endpoints available for service "{name}"'
    return f'failed to call webhook: Post "{url}": {reason}'


OPTIONS = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}


def admit(cluster, operation: str, rt, namespace: str | None, subresource: str, labels: dict, *, name: str = "",
          user=None, old: dict | None = None, new: dict | None = None, dry_run: bool = False, kinds=KINDS):
    """Raise what kube-apiserver answers when a matched webhook refuses the request or, with failurePolicy Fail,
    cannot be called; else the object as the mutating webhooks left it (`new`, patched by each answer's JSON
    Patch in turn; None for a DELETE). `user`: who asks (an rbac.User); `old`: the object before (an UPDATE's, or
    the one a DELETE deletes); `kinds`: the configurations to run (mutating before validating, as kube-apiserver
    runs them)."""
    if rt.group == GROUP and rt.name in KINDS:
        return new
    ns_labels = {}
    if namespace:
        ns = cluster.find(cluster.types[("", "namespaces")], "", namespace)
        ns_labels = ((ns or {}).get("metadata") or {}).get("labels") or {}
    elif rt.key == ("", "namespaces"):
        ns_labels = labels
    # an objectSelector matches the object before or after the request (admission/plugin/webhook/predicates)
    label_sets = [labels] + [((o or {}).get("metadata") or {}).get("labels") or {} for o in (new, old) if o]
    for kind in kinds:
        for config in sorted(cluster.list(cluster.types[(GROUP, kind)], None), key=lambda c: c["metadata"]["name"]):
            for hook in config.get("webhooks") or []:
                if not any(rule_matches(r, operation, rt, subresource) for r in hook.get("rules") or []):
                    continue
                if (namespace or rt.key == ("", "namespaces")) and \
                        not selector_matches(hook.get("namespaceSelector"), ns_labels):
                    continue
                if not any(selector_matches(hook.get("objectSelector"), each) for each in label_sets):
                    continue
                ignore = (hook.get("failurePolicy") or "Fail") == "Ignore"
                if not (hook.get("clientConfig") or {}).get("url"):  # a Service: no backend behind it here
                    if ignore:
                        continue
                    _fail(hook, _call_error(cluster, hook))
                request = {"uid": str(uuid.uuid4()),
                           "kind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
                           "resource": {"group": rt.group, "version": rt.version, "resource": rt.name},
                           # a Namespace's own request names it as its namespace too (seen on the real tier)
                           "subResource": subresource or None, "name": name,
                           "namespace": name if rt.key == ("", "namespaces") else namespace or "",
                           "operation": operation, "object": new, "oldObject": old, "dryRun": dry_run,
                           "userInfo": {"username": getattr(user, "name", ""), "uid": getattr(user, "uid", ""),
                                        "groups": list(getattr(user, "groups", []))},
                           "options": {"apiVersion": "meta.k8s.io/v1", "kind": OPTIONS.get(operation, "")}}
                try:
                    if not _conditions_match(hook, request):
                        continue
                    response = _call(cluster, hook, request)
                except (OSError, ValueError, TypeError, RuntimeError) as error:
                    if ignore:
                        continue
                    _fail(hook, str(error))
                for text in response.get("warnings") or []:
                    header = _warning_header(text)
                    if header and header not in cluster.warnings:
                        cluster.warnings.append(header)
                if not response.get("allowed"):
                    status = response.get("status") or {}
                    denied = f'admission webhook "{hook.get("name")}" denied the request'
                    message = status.get("message") or status.get("reason")
                    denied = f"{denied}: {message}" if message else f"{denied} without explanation"
                    # as v1.36.2 answered on the real tier: the webhook's words alone, no reason, no details
                    refusal = st.failure(status.get("code") or 403, status.get("reason") or "", denied)
                    refusal.warnings = list(cluster.warnings)
                    raise refusal
                if kind == "mutatingwebhookconfigurations" and new is not None and response.get("patch"):
                    new = _patched(hook, new, response)
    return new


def _patched(hook: dict, obj: dict, response: dict) -> dict:
    """The object after a mutating webhook's answer: its base64 JSON Patch applied (the only patchType there is);
    one that does not apply fails the request, as kube-apiserver's mutating dispatcher answers an internal
    error."""
    try:
        operations = json.loads(base64.b64decode(response["patch"]))
        if response.get("patchType") != "JSONPatch":
            raise ValueError(f"unsupported patch type {response.get('patchType')!r}")
        return apply_json_patch(obj, operations)
    except (ValueError, PatchError) as error:
        message = f'failed calling webhook "{hook.get("name")}": {error}'
        raise st.failure(500, "InternalError", f"Internal error occurred: {message}", {"causes": [{"message": message}]})


def _fail(hook: dict, why: str):
    message = f'failed calling webhook "{hook.get("name")}": {why}'
    raise st.failure(500, "InternalError", f"Internal error occurred: {message}", {"causes": [{"message": message}]})


def _conditions_match(hook: dict, request: dict) -> bool:
    """Every matchCondition true (CEL); an error in one raises (failurePolicy decides)."""
    conditions = hook.get("matchConditions") or []
    if not conditions:
        return True
    import cel

    variables = {"request": request, "object": request["object"], "oldObject": request["oldObject"]}
    for condition in conditions:
        value = cel.evaluate(condition["expression"], variables)
        if not isinstance(value, bool):
            raise ValueError(f"matchCondition {condition.get('name')}: not a boolean")
        if not value:
            return False
    return True


def _call(cluster, hook: dict, request: dict) -> dict:
    """The webhook's AdmissionResponse. The cluster's lock is let go meanwhile: a webhook may read the API
    server while it answers (kube-apiserver serves other requests while one waits on admission), and the
    Warning headers gathered so far for this request are kept."""
    config = hook.get("clientConfig") or {}
    timeout = hook.get("timeoutSeconds") or 10
    url = f"{config['url']}?timeout={timeout}s"
    context = ssl.create_default_context()
    if config.get("caBundle"):
        context = ssl.create_default_context(cadata=base64.b64decode(config["caBundle"]).decode())
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}).encode()
    mine = list(cluster.warnings)
    state = cluster.lock._release_save()  # an RLock held once or more by this request: let go wholly, then again
    try:
        try:
            answer = urllib.request.urlopen(urllib.request.Request(
                url, data=body, headers={"Content-Type": "application/json", "Accept": "application/json"}),
                timeout=timeout, context=context)
            review = json.loads(answer.read())
        except urllib.error.URLError as error:
            raise OSError(f'failed to call webhook: Post "{url}": {error.reason}') from None
        except TimeoutError:
            raise OSError(f'failed to call webhook: Post "{url}": context deadline exceeded') from None
    finally:
        cluster.lock._acquire_restore(state)
        cluster.warnings = mine
    response = review.get("response") if isinstance(review, dict) else None
    if not isinstance(response, dict) or response.get("uid") != request["uid"]:
        raise ValueError(f'expected response.uid="{request["uid"]}"')  # webhookrequest.VerifyAdmissionResponse
    return response


def _warning_header(text: str) -> str:
    """What NewWarningHeader(299, "", text) gives, or "" for a text it refuses (control characters)."""
    if not text or any(unicodedata.category(c) == "Cc" for c in text):  # Go's unicode.IsControl
        return ""
    return '299 - "' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
