{{/* Name of the chart, overridable. */}}
{{- define "asya-sync.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Name of the namespaced objects. The release "asya-sync" gives "asya-sync",
so the hooks are at http://asya-sync.<namespace>/sync.
*/}}
{{- define "asya-sync.fullname" -}}
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

{{- define "asya-sync.selectorLabels" -}}
app.kubernetes.io/name: {{ include "asya-sync.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "asya-sync.labels" -}}
{{ include "asya-sync.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: hooks
app.kubernetes.io/part-of: asya
{{- end -}}

{{- define "asya-sync.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "asya-sync.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "asya-sync.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "asya-sync.hookURL" -}}
{{- if .Values.compositeController.hookURL -}}
{{- .Values.compositeController.hookURL | trimSuffix "/" -}}
{{- else -}}
{{- $port := int .Values.service.port -}}
{{- if eq $port 80 -}}
{{- printf "http://%s.%s" (include "asya-sync.fullname" .) .Release.Namespace -}}
{{- else -}}
{{- printf "http://%s.%s:%d" (include "asya-sync.fullname" .) .Release.Namespace $port -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
RabbitMQ transports whose service-side password is mounted from a Secret:
a list of {transport, secretName, key, dir, file}. Fails when a transport
named under credentials.rabbitmq is missing, is not RabbitMQ, or has no
passwordFile.
*/}}
{{- define "asya-sync.rabbitmqMounts" -}}
{{- $transports := default dict .Values.config.transports -}}
{{- $out := list -}}
{{- range $name := keys .Values.credentials.rabbitmq | sortAlpha -}}
{{- $cred := get $.Values.credentials.rabbitmq $name -}}
{{- $t := get $transports $name -}}
{{- if not $t -}}
{{- fail (printf "credentials.rabbitmq.%s: no transport %q in config.transports" $name $name) -}}
{{- end -}}
{{- if ne (get $t "type") "rabbitmq" -}}
{{- fail (printf "credentials.rabbitmq.%s: transport %q is not of type rabbitmq" $name $name) -}}
{{- end -}}
{{- $file := get (default dict (get $t "config")) "passwordFile" -}}
{{- if not $file -}}
{{- fail (printf "credentials.rabbitmq.%s: config.transports.%s.config.passwordFile must be set to mount the password" $name $name) -}}
{{- end -}}
{{- $out = append $out (dict "transport" $name "secretName" $cred.secretName "key" (default "password" $cred.key) "dir" (dir $file) "file" (base $file)) -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}
