{{/*
The chart's names, as `helm create` makes them. ringmaster.name is the app.kubernetes.io/name label and the
second half of every object's name: "ringmaster-operator", or nameOverride. ringmaster.fullname names the
objects: fullnameOverride, else "<release>-<name>" (always both halves, unlike `helm create`, which drops the
name when the release already contains it: a release's names, and so its leader-election Lease, never change
under `helm upgrade`). Both are cut to 63 characters, a label value's and a DNS label's limit.
*/}}
{{- define "ringmaster.name" -}}
{{- default "ringmaster-operator" .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ringmaster.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "ringmaster.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The helm.sh/chart label: <chart>-<version>, with a SemVer build's "+" (not allowed in a label) as "_". */}}
{{- define "ringmaster.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ringmaster.serviceAccountName" -}}
{{- default (include "ringmaster.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "ringmaster.labels" -}}
app.kubernetes.io/name: {{ include "ringmaster.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ include "ringmaster.chart" . }}
{{- end -}}

{{- define "ringmaster.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ringmaster.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The pods' labels: podLabels, with the selector labels winning (the Deployment must select its pods). */}}
{{- define "ringmaster.podLabels" -}}
{{- $selector := include "ringmaster.selectorLabels" . | fromYaml -}}
{{- toYaml (merge $selector (.Values.podLabels | default dict)) -}}
{{- end -}}

{{/* A map of labels as "k=v, k=v" (sorted by key), for NOTES.txt. */}}
{{- define "ringmaster.labelPairs" -}}
{{- $pairs := list -}}
{{- range $k, $v := . }}{{ $pairs = append $pairs (printf "%s=%v" $k $v) }}{{ end -}}
{{- join ", " $pairs -}}
{{- end -}}

{{/* Seconds in a duration the schema has already checked ("15s"). */}}
{{- define "ringmaster.seconds" -}}
{{- trimSuffix "s" . | atoi -}}
{{- end -}}

{{/*
What values.schema.json cannot say, because it relates two values: each failure names the values and what
to change. Rendered by the Deployment, so `helm template`, `install` and `upgrade` all stop here.
*/}}
{{- define "ringmaster.validate" -}}
{{- $le := .Values.leaderElection -}}
{{- if and (gt (int .Values.replicaCount) 1) (not $le.enabled) -}}
{{- fail (printf "replicaCount is %d but leaderElection.enabled is false: two operators would act on the same jobs; enable leader election or set replicaCount=1" (int .Values.replicaCount)) -}}
{{- end -}}
{{- if $le.enabled -}}
{{- $lease := include "ringmaster.seconds" $le.leaseDuration | int -}}
{{- $renew := include "ringmaster.seconds" $le.renewDeadline | int -}}
{{- $retry := include "ringmaster.seconds" $le.retryPeriod | int -}}
{{- if ge $renew $lease -}}
{{- fail (printf "leaderElection.renewDeadline (%s) must be shorter than leaderElection.leaseDuration (%s)" $le.renewDeadline $le.leaseDuration) -}}
{{- end -}}
{{- if ge $retry $renew -}}
{{- fail (printf "leaderElection.retryPeriod (%s) must be shorter than leaderElection.renewDeadline (%s)" $le.retryPeriod $le.renewDeadline) -}}
{{- end -}}
{{- end -}}
{{- if eq (int .Values.metrics.port) (int .Values.healthProbePort) -}}
{{- fail (printf "metrics.port and healthProbePort are both %d: the operator serves them on two listeners" (int .Values.healthProbePort)) -}}
{{- end -}}
{{- end -}}
