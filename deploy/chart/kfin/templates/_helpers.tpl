{{/*
The name of kfin serve's objects; the guard's add "-guard". Release "kfin" gives deploy/'s names. No "-kfin" is
appended: the release is kfin's, and its objects are what deploy/ names them.
*/}}
{{- define "kfin.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "kfin.guardName" -}}
{{- include "kfin.fullname" . -}}-guard
{{- end -}}

{{/*
Helm's standard labels, on every object besides deploy/'s own. Never in a selector: the selectors are deploy/'s
(app.kubernetes.io/name), so that the chart and the kustomizations make the same objects.
*/}}
{{- define "kfin.helmLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{/* kfin serve's labels: deploy/base's, and Helm's. */}}
{{- define "kfin.serveLabels" -}}
app.kubernetes.io/name: kfin
app.kubernetes.io/part-of: kfin
{{ include "kfin.helmLabels" . }}
{{- end -}}

{{/* The guard's labels: deploy/guard's, and Helm's. */}}
{{- define "kfin.guardLabels" -}}
app.kubernetes.io/part-of: kfin
{{ include "kfin.helmLabels" . }}
{{- end -}}

{{- define "kfin.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* kfin guard's arguments for guard.mode and guard.skipUsers, as a JSON list. */}}
{{- define "kfin.guardPolicyArgs" -}}
{{- $args := list -}}
{{- if eq .Values.guard.mode "warn" -}}
{{- $args = append $args "--warn-only" -}}
{{- else if eq .Values.guard.mode "deny" -}}
{{- $args = append $args "--deny" -}}
{{- end -}}
{{- range .Values.guard.skipUsers -}}
{{- $args = concat $args (list "--skip-user" .) -}}
{{- end -}}
{{- toJson $args -}}
{{- end -}}

{{/* "true" when the chart makes a ServiceMonitor: asked for, or auto and the API server serves the kind. */}}
{{- define "kfin.serviceMonitor" -}}
{{- $wanted := .Values.prometheus.serviceMonitor -}}
{{- if or (eq (toString $wanted) "true") (and (eq (toString $wanted) "auto") (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1/ServiceMonitor")) -}}
true
{{- end -}}
{{- end -}}

{{/* "true" when the chart makes the PrometheusRules, likewise. */}}
{{- define "kfin.rules" -}}
{{- $wanted := .Values.prometheus.rules -}}
{{- if or (eq (toString $wanted) "true") (and (eq (toString $wanted) "auto") (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1/PrometheusRule")) -}}
true
{{- end -}}
{{- end -}}

{{/*
The groups of a rules file of deploy/ (files/ links to it) for a PrometheusRule: each alert's runbook_url made to
link to prometheus.runbookUrl (the template's empty string filled, as deploy/prometheus-operator's replacement
does), and the commands in the texts naming the release's namespace and Deployments. The file's own templates
({{ $labels.name }}...) are data here, never Helm's: they reach Prometheus as written.
*/}}
{{- define "kfin.ruleGroups" -}}
{{- $root := index . 0 -}}
{{- $file := index . 1 -}}
{{- $text := $root.Files.Get $file -}}
{{- $text = replace "-n kfin-system" (printf "-n %s" $root.Release.Namespace) $text -}}
{{- $text = replace "deploy/kfin" (printf "deploy/%s" (include "kfin.fullname" $root)) $text -}}
{{- $rules := fromYaml $text -}}
{{- $empty := printf "%s with %q %s" "{{" "" "}}" -}}
{{- $filled := printf "%s with %q %s" "{{" $root.Values.prometheus.runbookUrl "}}" -}}
{{- range $rules.groups -}}
{{- range .rules -}}
{{- if .annotations.runbook_url -}}
{{- $_ := set .annotations "runbook_url" (replace $empty $filled .annotations.runbook_url) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toYaml $rules.groups -}}
{{- end -}}

{{/* Both parts' Pods: a non-root user, the runtime's default seccomp profile (deploy/'s, as each Deployment there). */}}
{{- define "kfin.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Both parts' containers: a read-only root filesystem, no privilege escalation, no capabilities. */}}
{{- define "kfin.containerSecurityContext" -}}
readOnlyRootFilesystem: true
allowPrivilegeEscalation: false
capabilities:
  drop: ["ALL"]
{{- end -}}
