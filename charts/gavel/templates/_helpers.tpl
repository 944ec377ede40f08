{{/* The release's name for its objects: "gavel" for a release named gavel. */}}
{{- define "gavel.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "gavel.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride -}}
{{- end -}}

{{- define "gavel.selectorLabels" -}}
app.kubernetes.io/name: {{ default .Chart.Name .Values.nameOverride }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "gavel.labels" -}}
{{ include "gavel.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The Secret of the webhook's serving certificate. */}}
{{- define "gavel.tlsSecret" -}}
{{ include "gavel.fullname" . }}-tls
{{- end -}}

{{/* Namespaces no webhook is called for: gavel's own and the values'. */}}
{{- define "gavel.excludeNamespaces" -}}
{{- $ns := list (include "gavel.namespace" .) -}}
{{- range .Values.webhooks.excludeNamespaces -}}{{- if ne . (include "gavel.namespace" $) -}}{{- $ns = append $ns . -}}{{- end -}}{{- end -}}
{{- join "," $ns -}}
{{- end -}}

{{/* The configuration ConfigMap (upstream's kyverno ConfigMap). */}}
{{- define "gavel.configName" -}}
{{- default (include "gavel.fullname" .) .Values.config.name -}}
{{- end -}}

{{- define "gavel.configNamespace" -}}
{{- default (include "gavel.namespace" .) .Values.config.namespace -}}
{{- end -}}
