{{- define "ringmaster.fullname" -}}
{{- printf "%s-ringmaster-operator" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ringmaster.serviceAccountName" -}}
{{- default (include "ringmaster.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "ringmaster.labels" -}}
app.kubernetes.io/name: ringmaster-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "ringmaster.selectorLabels" -}}
app.kubernetes.io/name: ringmaster-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
