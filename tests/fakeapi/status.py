"""metav1.Status bodies exactly as kube-apiserver writes them (see shared/k8s-reference)."""


class APIError(Exception):
    """Raised inside the fake; the handler turns it into an HTTP response."""

    def __init__(self, code: int, body, content_type: str = "application/json"):
        super().__init__(body if isinstance(body, str) else body.get("message"))
        self.code = code
        self.body = body
        self.content_type = content_type


def qualified(group: str, resource: str) -> str:
    """GroupResource.String(): "configmaps", "widgets.example.com"."""
    return f"{resource}.{group}" if group else resource


def _details(name, group, resource, **extra):
    details = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    if resource:
        details["kind"] = resource
    details.update(extra)
    return details


def failure(code: int, reason: str, message: str, details: dict | None = None) -> APIError:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message}
    if reason:  # Go leaves an empty reason out (a webhook's refusal without one, on the real tier)
        body["reason"] = reason
    if details is not None:
        body["details"] = details
    body["code"] = code
    return APIError(code, body)


def not_found(group: str, resource: str, name: str) -> APIError:
    return failure(404, "NotFound", f'{qualified(group, resource)} "{name}" not found',
                   _details(name, group, resource))


def page_not_found() -> APIError:
    """A path under /apis of a group the server does not serve: no handler at all, so Go's plain text (seen on
    the real tier, as for a CRD deleted since discovery)."""
    return APIError(404, "404 page not found\n", "text/plain; charset=utf-8")


def unknown_resource() -> APIError:
    return failure(404, "NotFound", "the server could not find the requested resource", {})


def already_exists(group: str, resource: str, name: str) -> APIError:
    return failure(409, "AlreadyExists", f'{qualified(group, resource)} "{name}" already exists',
                   _details(name, group, resource))


def conflict(group: str, resource: str, name: str) -> APIError:
    return failure(409, "Conflict",
                   f'Operation cannot be fulfilled on {qualified(group, resource)} "{name}": the object has been '
                   "modified; please apply your changes to the latest version and try again",
                   _details(name, group, resource))


def forbidden(user: str, verb: str, group: str, resource: str, subresource: str, namespace: str | None,
              name: str | None) -> APIError:
    full = f"{resource}/{subresource}" if subresource else resource
    where = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    subject = f'{qualified(group, resource)} "{name}"' if name else qualified(group, resource)
    return failure(403, "Forbidden",
                   f'{subject} is forbidden: User "{user}" cannot {verb} resource "{full}" in API group "{group}" {where}',
                   _details(name, group, resource))


def namespace_terminating(group: str, resource: str, name: str, namespace: str) -> APIError:
    return failure(403, "Forbidden",
                   f'{qualified(group, resource)} "{name}" is forbidden: unable to create new content in namespace '
                   f"{namespace} because it is being terminated",
                   _details(name, group, resource, causes=[{"reason": "NamespaceTerminating",
                                                            "message": f"namespace {namespace} is being terminated",
                                                            "field": "metadata.namespace"}]))


def invalid(kind: str, name: str, field: str, cause_reason: str, detail: str, group: str = "",
            repeat: int = 1) -> APIError:
    """422 Invalid. The real server lists the finalizer cause twice; `repeat` reproduces that."""
    cause = {"reason": cause_reason, "message": detail, "field": field}
    return failure(422, "Invalid", f'{kind} "{name}" is invalid: {field}: {detail}',
                   _details(name, group, kind, causes=[dict(cause) for _ in range(repeat)]))


def patch_rejected() -> APIError:
    """What a JSON Patch that cannot be applied (a failing `test` op among them) gets."""
    return failure(422, "Invalid", "the server rejected our request due to an error in our request", {})


def unauthorized() -> APIError:
    return failure(401, "Unauthorized", "Unauthorized")


def bad_request(message: str) -> APIError:
    return failure(400, "BadRequest", message)


def method_not_allowed() -> APIError:
    return failure(405, "MethodNotAllowed", "the server does not allow this method on the requested resource", {})


def unsupported_media_type(accepted: str) -> APIError:
    return failure(415, "UnsupportedMediaType",
                   f"the body of the request was in an unknown format - accepted media types include: {accepted}")


def not_acceptable() -> APIError:
    return failure(406, "NotAcceptable",
                   "only the following media types are accepted: application/json, application/yaml, "
                   "application/vnd.kubernetes.protobuf")


def service_unavailable() -> APIError:
    """An aggregated API whose APIService has no backend: the proxy's plain-text 503."""
    return APIError(503, "service unavailable\n", "text/plain; charset=utf-8")


def internal_error(message: str) -> APIError:
    return failure(500, "InternalError", f"Internal error occurred: {message}", {})


def success(name: str, group: str, resource: str, uid: str) -> dict:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": _details(name, group, resource, uid=uid)}
