"""Built-in resource types of Kubernetes v1.36, for files that carry no discovery (a kubectl `List`).

A live cluster and kfin's own snapshots always use the server's discovery instead. The test
tests/commands/test_stuck_offline.py::test_builtin_kinds_match_discovery keeps this table equal to the server's.
"""

from kfin.model import ResourceType

# (group, version, resource, kind, namespaced, short names, singular): one row a kind, as a table reads
# fmt: off
_TABLE = [
    ('', 'v1', 'componentstatuses', 'ComponentStatus', False, ('cs',), 'componentstatus'),
    ('', 'v1', 'configmaps', 'ConfigMap', True, ('cm',), 'configmap'),
    ('', 'v1', 'endpoints', 'Endpoints', True, ('ep',), 'endpoints'),
    ('', 'v1', 'events', 'Event', True, ('ev',), 'event'),
    ('', 'v1', 'limitranges', 'LimitRange', True, ('limits',), 'limitrange'),
    ('', 'v1', 'namespaces', 'Namespace', False, ('ns',), 'namespace'),
    ('', 'v1', 'nodes', 'Node', False, ('no',), 'node'),
    ('', 'v1', 'persistentvolumeclaims', 'PersistentVolumeClaim', True, ('pvc',), 'persistentvolumeclaim'),
    ('', 'v1', 'persistentvolumes', 'PersistentVolume', False, ('pv',), 'persistentvolume'),
    ('', 'v1', 'pods', 'Pod', True, ('po',), 'pod'),
    ('', 'v1', 'podtemplates', 'PodTemplate', True, (), 'podtemplate'),
    ('', 'v1', 'replicationcontrollers', 'ReplicationController', True, ('rc',), 'replicationcontroller'),
    ('', 'v1', 'resourcequotas', 'ResourceQuota', True, ('quota',), 'resourcequota'),
    ('', 'v1', 'secrets', 'Secret', True, (), 'secret'),
    ('', 'v1', 'serviceaccounts', 'ServiceAccount', True, ('sa',), 'serviceaccount'),
    ('', 'v1', 'services', 'Service', True, ('svc',), 'service'),
    ('apiregistration.k8s.io', 'v1', 'apiservices', 'APIService', False, (), 'apiservice'),
    ('apps', 'v1', 'controllerrevisions', 'ControllerRevision', True, (), 'controllerrevision'),
    ('apps', 'v1', 'daemonsets', 'DaemonSet', True, ('ds',), 'daemonset'),
    ('apps', 'v1', 'deployments', 'Deployment', True, ('deploy',), 'deployment'),
    ('apps', 'v1', 'replicasets', 'ReplicaSet', True, ('rs',), 'replicaset'),
    ('apps', 'v1', 'statefulsets', 'StatefulSet', True, ('sts',), 'statefulset'),
    ('events.k8s.io', 'v1', 'events', 'Event', True, ('ev',), 'event'),
    ('autoscaling', 'v2', 'horizontalpodautoscalers', 'HorizontalPodAutoscaler', True, ('hpa',), 'horizontalpodautoscaler'),
    ('batch', 'v1', 'cronjobs', 'CronJob', True, ('cj',), 'cronjob'),
    ('batch', 'v1', 'jobs', 'Job', True, (), 'job'),
    ('certificates.k8s.io', 'v1', 'certificatesigningrequests', 'CertificateSigningRequest', False, ('csr',), 'certificatesigningrequest'),
    ('networking.k8s.io', 'v1', 'ingressclasses', 'IngressClass', False, (), 'ingressclass'),
    ('networking.k8s.io', 'v1', 'ingresses', 'Ingress', True, ('ing',), 'ingress'),
    ('networking.k8s.io', 'v1', 'ipaddresses', 'IPAddress', False, ('ip',), 'ipaddress'),
    ('networking.k8s.io', 'v1', 'networkpolicies', 'NetworkPolicy', True, ('netpol',), 'networkpolicy'),
    ('networking.k8s.io', 'v1', 'servicecidrs', 'ServiceCIDR', False, (), 'servicecidr'),
    ('policy', 'v1', 'poddisruptionbudgets', 'PodDisruptionBudget', True, ('pdb',), 'poddisruptionbudget'),
    ('rbac.authorization.k8s.io', 'v1', 'clusterrolebindings', 'ClusterRoleBinding', False, (), 'clusterrolebinding'),
    ('rbac.authorization.k8s.io', 'v1', 'clusterroles', 'ClusterRole', False, (), 'clusterrole'),
    ('rbac.authorization.k8s.io', 'v1', 'rolebindings', 'RoleBinding', True, (), 'rolebinding'),
    ('rbac.authorization.k8s.io', 'v1', 'roles', 'Role', True, (), 'role'),
    ('storage.k8s.io', 'v1', 'csidrivers', 'CSIDriver', False, (), 'csidriver'),
    ('storage.k8s.io', 'v1', 'csinodes', 'CSINode', False, (), 'csinode'),
    ('storage.k8s.io', 'v1', 'csistoragecapacities', 'CSIStorageCapacity', True, (), 'csistoragecapacity'),
    ('storage.k8s.io', 'v1', 'storageclasses', 'StorageClass', False, ('sc',), 'storageclass'),
    ('storage.k8s.io', 'v1', 'volumeattachments', 'VolumeAttachment', False, (), 'volumeattachment'),
    ('storage.k8s.io', 'v1', 'volumeattributesclasses', 'VolumeAttributesClass', False, ('vac',), 'volumeattributesclass'),
    ('admissionregistration.k8s.io', 'v1', 'mutatingadmissionpolicies', 'MutatingAdmissionPolicy', False, (), 'mutatingadmissionpolicy'),
    ('admissionregistration.k8s.io', 'v1', 'mutatingadmissionpolicybindings', 'MutatingAdmissionPolicyBinding', False, (), 'mutatingadmissionpolicybinding'),
    ('admissionregistration.k8s.io', 'v1', 'mutatingwebhookconfigurations', 'MutatingWebhookConfiguration', False, (), 'mutatingwebhookconfiguration'),
    ('admissionregistration.k8s.io', 'v1', 'validatingadmissionpolicies', 'ValidatingAdmissionPolicy', False, (), 'validatingadmissionpolicy'),
    ('admissionregistration.k8s.io', 'v1', 'validatingadmissionpolicybindings', 'ValidatingAdmissionPolicyBinding', False, (), 'validatingadmissionpolicybinding'),
    ('admissionregistration.k8s.io', 'v1', 'validatingwebhookconfigurations', 'ValidatingWebhookConfiguration', False, (), 'validatingwebhookconfiguration'),
    ('apiextensions.k8s.io', 'v1', 'customresourcedefinitions', 'CustomResourceDefinition', False, ('crd', 'crds'), 'customresourcedefinition'),
    ('scheduling.k8s.io', 'v1', 'priorityclasses', 'PriorityClass', False, ('pc',), 'priorityclass'),
    ('coordination.k8s.io', 'v1', 'leases', 'Lease', True, (), 'lease'),
    ('node.k8s.io', 'v1', 'runtimeclasses', 'RuntimeClass', False, (), 'runtimeclass'),
    ('discovery.k8s.io', 'v1', 'endpointslices', 'EndpointSlice', True, (), 'endpointslice'),
    ('resource.k8s.io', 'v1', 'deviceclasses', 'DeviceClass', False, (), 'deviceclass'),
    ('resource.k8s.io', 'v1', 'resourceclaims', 'ResourceClaim', True, (), 'resourceclaim'),
    ('resource.k8s.io', 'v1', 'resourceclaimtemplates', 'ResourceClaimTemplate', True, (), 'resourceclaimtemplate'),
    ('resource.k8s.io', 'v1', 'resourceslices', 'ResourceSlice', False, (), 'resourceslice'),
    ('flowcontrol.apiserver.k8s.io', 'v1', 'flowschemas', 'FlowSchema', False, (), 'flowschema'),
    ('flowcontrol.apiserver.k8s.io', 'v1', 'prioritylevelconfigurations', 'PriorityLevelConfiguration', False, (), 'prioritylevelconfiguration'),
]
# fmt: on


def builtin_resources() -> list[ResourceType]:
    return [ResourceType(g, v, r, k, n, ("get", "list"), s, singular) for g, v, r, k, n, s, singular in _TABLE]
