"""Authentication by bearer token and RBAC authorization from the Roles and bindings in the store."""

from dataclasses import dataclass, field

DISCOVERY_PATHS = ("/version", "/api", "/apis", "/healthz", "/readyz", "/livez")
SELF_REVIEWS = {("authentication.k8s.io", "selfsubjectreviews"), ("authorization.k8s.io", "selfsubjectaccessreviews"),
                ("authorization.k8s.io", "selfsubjectrulesreviews")}


@dataclass
class User:
    name: str
    groups: list = field(default_factory=list)
    uid: str = ""


def service_account_user(namespace: str, name: str, uid: str = "") -> User:
    return User(f"system:serviceaccount:{namespace}:{name}",
                ["system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"], uid)


def _subject_matches(subject: dict, user: User, binding_namespace: str) -> bool:
    kind = subject.get("kind")
    if kind == "User":
        return subject.get("name") == user.name
    if kind == "Group":
        return subject.get("name") in user.groups
    if kind == "ServiceAccount":
        ns = subject.get("namespace") or binding_namespace
        return user.name == f"system:serviceaccount:{ns}:{subject.get('name')}"
    return False


def _rule_allows(rule: dict, verb: str, group: str, resource: str, name: str | None) -> bool:
    def has(values, wanted):
        return "*" in (values or []) or wanted in (values or [])
    if not has(rule.get("verbs"), verb) or not has(rule.get("apiGroups"), group):
        return False
    resources = rule.get("resources") or []
    base, _, sub = resource.partition("/")
    if not ("*" in resources or resource in resources or (sub and f"*/{sub}" in resources)):
        return False
    names = rule.get("resourceNames")
    return not names or (name is not None and name in names)


# What every authenticated user may do (system:basic-user, system:discovery, system:public-info-viewer,
# system:service-account-issuer-discovery), as a SelfSubjectRulesReview lists it first (capture 31 of causes).
BASIC_RESOURCE_RULES = [
    {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
     "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]},
    {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"]}]
BASIC_NON_RESOURCE_RULES = [
    {"verbs": ["get"], "nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi",
                                           "/openapi/*", "/readyz", "/version", "/version/"]},
    {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"]},
    {"verbs": ["get"], "nonResourceURLs": ["/.well-known", "/.well-known/*"]}]


def rules_for(cluster, user: User, namespace: str) -> tuple[list, list]:
    """(resource rules, non-resource rules) the user has in a namespace: a SelfSubjectRulesReview."""
    rbac = "rbac.authorization.k8s.io"
    roles = cluster.types[(rbac, "clusterroles")]
    found = []
    for binding in cluster.list(cluster.types[(rbac, "clusterrolebindings")], None):
        if any(_subject_matches(s, user, "") for s in binding.get("subjects") or []):
            found.append(cluster.find(roles, "", binding["roleRef"]["name"]))
    for binding in cluster.list(cluster.types[(rbac, "rolebindings")], namespace):
        if any(_subject_matches(s, user, namespace) for s in binding.get("subjects") or []):
            ref = binding["roleRef"]
            found.append(cluster.find(roles, "", ref["name"]) if ref.get("kind") == "ClusterRole" else
                         cluster.find(cluster.types[(rbac, "roles")], namespace, ref["name"]))
    resource_rules = list(BASIC_RESOURCE_RULES)
    non_resource = list(BASIC_NON_RESOURCE_RULES)
    for role in filter(None, found):
        for rule in role.get("rules") or []:
            if rule.get("nonResourceURLs"):
                non_resource.append({"verbs": rule.get("verbs", []), "nonResourceURLs": rule["nonResourceURLs"]})
            else:
                resource_rules.append({k: rule[k] for k in ("verbs", "apiGroups", "resources", "resourceNames")
                                       if rule.get(k)})
    return resource_rules, non_resource


def allowed(cluster, user: User, verb: str, group: str, resource: str, subresource: str, namespace: str | None,
            name: str | None) -> bool:
    if "system:masters" in user.groups:
        return True
    if verb == "create" and (group, resource) in SELF_REVIEWS:
        return True  # system:basic-user grants these to every authenticated user
    full = f"{resource}/{subresource}" if subresource else resource
    rbac = "rbac.authorization.k8s.io"
    roles = cluster.types[(rbac, "clusterroles")]
    for binding in cluster.list(cluster.types[(rbac, "clusterrolebindings")], None):
        if any(_subject_matches(s, user, "") for s in binding.get("subjects") or []):
            role = cluster.find(roles, "", binding["roleRef"]["name"])
            if role and any(_rule_allows(r, verb, group, full, name) for r in role.get("rules") or []):
                return True
    if namespace:
        for binding in cluster.list(cluster.types[(rbac, "rolebindings")], namespace):
            if any(_subject_matches(s, user, namespace) for s in binding.get("subjects") or []):
                ref = binding["roleRef"]
                role = cluster.find(roles, "", ref["name"]) if ref.get("kind") == "ClusterRole" else \
                    cluster.find(cluster.types[(rbac, "roles")], namespace, ref["name"])
                if role and any(_rule_allows(r, verb, group, full, name) for r in role.get("rules") or []):
                    return True
    return False
