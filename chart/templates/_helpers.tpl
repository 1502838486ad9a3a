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

{{/*
The service's image, which also writes the runtime script with
runtimeDelivery initContainer: by digest when image.digest is set (the tag
then ignored), else by tag, the chart's appVersion unless image.tag says
otherwise.
*/}}
{{- define "asya-sync.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* The Service port: 443 for HTTPS hooks, 80 for plain HTTP, unless set. */}}
{{- define "asya-sync.servicePort" -}}
{{- if .Values.service.port -}}
{{- int .Values.service.port -}}
{{- else if .Values.hooks.tls.enabled -}}
443
{{- else -}}
80
{{- end -}}
{{- end -}}

{{- define "asya-sync.hookURL" -}}
{{- if .Values.compositeController.hookURL -}}
{{- .Values.compositeController.hookURL | trimSuffix "/" -}}
{{- else -}}
{{- $port := include "asya-sync.servicePort" . | int -}}
{{- $scheme := ternary "https" "http" .Values.hooks.tls.enabled -}}
{{- $host := printf "%s.%s" (include "asya-sync.fullname" .) .Release.Namespace -}}
{{- if eq $port (ternary 443 80 .Values.hooks.tls.enabled) -}}
{{- printf "%s://%s" $scheme $host -}}
{{- else -}}
{{- printf "%s://%s:%d" $scheme $host $port -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Secret with the hooks' tls.crt, tls.key and ca.crt. */}}
{{- define "asya-sync.tlsSecretName" -}}
{{- default (printf "%s-tls" (include "asya-sync.fullname" .)) .Values.hooks.tls.existingSecret -}}
{{- end -}}

{{/* Secret with the hooks' Bearer tokens, one a key. */}}
{{- define "asya-sync.tokenSecretName" -}}
{{- default (printf "%s-token" (include "asya-sync.fullname" .)) .Values.hooks.auth.token.existingSecret -}}
{{- end -}}

{{/* Fails on combinations of hooks.* values that cannot work. */}}
{{- define "asya-sync.checkHooks" -}}
{{- $h := .Values.hooks -}}
{{- if and $h.tls.certManager.enabled (not $h.tls.enabled) -}}
{{- fail "hooks.tls.certManager.enabled needs hooks.tls.enabled" -}}
{{- end -}}
{{- if and $h.tls.certManager.enabled $h.tls.existingSecret -}}
{{- fail "hooks.tls: set existingSecret or certManager.enabled, not both" -}}
{{- end -}}
{{- if and $h.tls.certManager.enabled (not $h.tls.certManager.issuerRef.name) -}}
{{- fail "hooks.tls.certManager.issuerRef.name is required with hooks.tls.certManager.enabled" -}}
{{- end -}}
{{- if and $h.tls.enabled (not $h.auth.token.enabled) (not $h.auth.mtls.enabled) (not $h.auth.allowUnauthenticated) -}}
{{- fail "hooks.auth.token.enabled=false with hooks.tls.enabled=true leaves the hooks, /finalize (which deletes queues) included, open to anyone who reaches the Service: keep hooks.auth.token.enabled=true, or enable hooks.auth.mtls, or set hooks.auth.allowUnauthenticated=true to accept it (plain HTTP: hooks.tls.enabled=false as well)" -}}
{{- end -}}
{{- if $h.auth.mtls.enabled -}}
{{- if not $h.tls.enabled -}}
{{- fail "hooks.auth.mtls.enabled needs hooks.tls.enabled" -}}
{{- end -}}
{{- if or (not $h.auth.mtls.clientCASecret) (not $h.auth.mtls.clientCertSecret) -}}
{{- fail "hooks.auth.mtls needs clientCASecret and clientCertSecret" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
Fails when the chart would generate hook credentials (a CA and
certificate, or a token) in a render that cannot see the cluster: helm
template, as Argo CD and Flux's post-renderers run it, or helm install
--dry-run. lookup finds nothing there, so every render would make new
ones, which the service reloads and Metacontroller does not (it reads
them when the CompositeController changes): every hook call refused.
*/}}
{{- define "asya-sync.checkOffline" -}}
{{- $h := .Values.hooks -}}
{{- $what := list -}}
{{- if and $h.tls.enabled (not $h.tls.existingSecret) (not $h.tls.certManager.enabled) -}}
{{- $what = append $what "a CA and certificate (set hooks.tls.existingSecret, or hooks.tls.certManager.enabled)" -}}
{{- end -}}
{{- if and $h.auth.token.enabled (not $h.auth.token.existingSecret) -}}
{{- $what = append $what "a token (set hooks.auth.token.existingSecret)" -}}
{{- end -}}
{{- if and $what (not $h.generateOffline) (not (lookup "v1" "Namespace" "" "kube-system")) -}}
{{- fail (printf "rendered without a cluster (helm template, Argo CD, Flux, helm install --dry-run), the chart cannot see the hook credentials it generated before and would generate new ones on every render: %s. Metacontroller keeps the old ones until its CompositeController changes, so every hook call would be refused. Give them as existing Secrets or from cert-manager (docs/install.md, \"GitOps (Argo CD, Flux)\"), render with the cluster (helm install --dry-run=server), or set hooks.generateOffline=true to generate them anyway, new on every render" (join "; " $what)) -}}
{{- end -}}
{{- end -}}

{{/*
Fails when a Secret the CompositeController names lacks the key it
names: Metacontroller would stop calling every hook of the controller.
Takes (list namespace name data key value-name).
*/}}
{{- define "asya-sync.requireKey" -}}
{{- $ns := index . 0 -}}{{- $name := index . 1 -}}{{- $data := index . 2 | default dict -}}
{{- $key := index . 3 -}}{{- $value := index . 4 -}}
{{- if not (hasKey $data $key) -}}
{{- fail (printf "%s=%s: the Secret %s/%s has no key %q, so Metacontroller could not call the hooks; add the key to the Secret first (docs/install.md, \"Securing the hooks\")" $value $key $ns $name $key) -}}
{{- end -}}
{{- end -}}

{{/*
The connection fields of every webhook in the CompositeController
(Metacontroller 4.16+): verify the hooks' certificate with the CA in the
TLS Secret, present the Bearer token and the client certificate, each
read by Metacontroller from a Secret in the release namespace.
*/}}
{{- define "asya-sync.webhookConnection" -}}
{{- $ns := .Release.Namespace -}}
{{- if .Values.hooks.tls.enabled }}
caBundle:
  secretRef:
    name: {{ include "asya-sync.tlsSecretName" . }}
    namespace: {{ $ns }}
    key: {{ .Values.hooks.tls.caBundleKey }}
{{- end }}
{{- if .Values.hooks.auth.token.enabled }}
authorization:
  type: Bearer
  secretRef:
    name: {{ include "asya-sync.tokenSecretName" . }}
    namespace: {{ $ns }}
    key: {{ .Values.hooks.auth.token.key }}
{{- end }}
{{- if .Values.hooks.auth.mtls.enabled }}
clientTLS:
  secretRef:
    name: {{ .Values.hooks.auth.mtls.clientCertSecret }}
    namespace: {{ $ns }}
{{- end }}
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

{{/*
Every enabled RabbitMQ transport names its broker user: the chart has no
default, since stock RabbitMQ admits guest only from localhost
(loopback_users) and a guest install would report BrokerUnavailable.
*/}}
{{- define "asya-sync.checkTransports" -}}
{{- $transports := default dict .Values.config.transports -}}
{{- range $name := keys $transports | sortAlpha -}}
{{- $t := default dict (get $transports $name) -}}
{{- $enabled := or (not (hasKey $t "enabled")) (get $t "enabled") -}}
{{- if and $enabled (eq (toString (get $t "type")) "rabbitmq") (not (get (default dict (get $t "config")) "username")) -}}
{{- fail (printf "config.transports.%s.config.username is required: create a user for asya-sync on the RabbitMQ broker and set its name here (and its password with passwordSecretRef / passwordFile). The chart has no default user: guest works only from localhost unless the broker's loopback_users allows it, so set username: guest only for such a broker. Or disable the transport with config.transports.%s.enabled=false." $name $name) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The names of config.transports, sorted, as JSON: "configured" those that
are set (a transport set to null is absent), "enabled" those of them not
set enabled: false. Read with fromJson.
*/}}
{{- define "asya-sync.transportNames" -}}
{{- $transports := default dict .Values.config.transports -}}
{{- $configured := list -}}
{{- $enabled := list -}}
{{- range $name := keys $transports | sortAlpha -}}
{{- $t := get $transports $name -}}
{{- if kindIs "map" $t -}}
{{- $configured = append $configured $name -}}
{{- if or (not (hasKey $t "enabled")) (get $t "enabled") -}}
{{- $enabled = append $enabled $name -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- dict "configured" $configured "enabled" $enabled | toJson -}}
{{- end -}}

{{/*
The transport of flat actors that name none: config.flatActors.transport,
or else the only enabled transport; empty if neither.
*/}}
{{- define "asya-sync.flatTransport" -}}
{{- $enabled := (include "asya-sync.transportNames" . | fromJson).enabled -}}
{{- $set := (default dict .Values.config.flatActors).transport -}}
{{- if $set -}}{{ $set }}{{- else if eq (len $enabled) 1 -}}{{ first $enabled }}{{- end -}}
{{- end -}}

{{/*
The service's rules on config.flatActors that span keys, which
values.schema.json cannot express; each failure names the key the
service's error names. Their transport, when set, must be one of
config.transports and enabled (unset with several enabled transports,
a flat actor that names none says in its status what to set). The sink
and the sump, x-sink and x-sump unless set, are two different actors.
*/}}
{{- define "asya-sync.checkFlatActors" -}}
{{- $flat := default dict .Values.config.flatActors -}}
{{- $sink := default "x-sink" $flat.sink -}}
{{- $sump := default "x-sump" $flat.sump -}}
{{- if eq $sink $sump -}}
{{- fail (printf "config.flatActors.sump: %q is the sink's name too (config.flatActors.sink, default x-sink): give the sump another name" $sump) -}}
{{- end -}}
{{- $names := include "asya-sync.transportNames" . | fromJson -}}
{{- with $flat.transport -}}
{{- if not (has . $names.configured) -}}
{{- fail (printf "config.flatActors.transport: %q is not in config.transports (configured: %s)" . (join ", " $names.configured | default "none")) -}}
{{- end -}}
{{- if not (has . $names.enabled) -}}
{{- fail (printf "config.flatActors.transport: %q is disabled (config.transports.%s.enabled=false): name an enabled one (enabled: %s)" . . (join ", " $names.enabled | default "none")) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The service lists actors' pods itself (config.watch.pods whileUnhealthy). */}}
{{- define "asya-sync.readsPods" -}}
{{- if eq (toString .Values.config.watch.pods) "whileUnhealthy" -}}true{{- end -}}
{{- end -}}

{{/* The service lists the actors that claim a queue itself (config.watch.namesakes read). */}}
{{- define "asya-sync.readsNamesakes" -}}
{{- if eq (toString .Values.config.watch.namesakes) "read" -}}true{{- end -}}
{{- end -}}

{{/*
The Secrets the service gets itself (config.watch.secrets read): the names
of every ...SecretRef in the enabled transports' config, as a JSON list.
*/}}
{{- define "asya-sync.readSecretNames" -}}
{{- $names := list -}}
{{- if eq (toString .Values.config.watch.secrets) "read" -}}
{{- $transports := default dict .Values.config.transports -}}
{{- range $name := (include "asya-sync.transportNames" . | fromJson).enabled -}}
{{- $names = concat $names (include "asya-sync.secretRefNames" (get (get $transports $name) "config" | default dict) | fromJsonArray) -}}
{{- end -}}
{{- end -}}
{{- $names | uniq | sortAlpha | toJson -}}
{{- end -}}

{{/* The name of every map under a key ending in SecretRef, at any depth of a map, as a JSON list. */}}
{{- define "asya-sync.secretRefNames" -}}
{{- $names := list -}}
{{- range $key, $value := . -}}
{{- if kindIs "map" $value -}}
{{- if and (hasSuffix "secretref" (lower $key)) $value.name -}}
{{- $names = append $names (toString $value.name) -}}
{{- else -}}
{{- $names = concat $names (include "asya-sync.secretRefNames" $value | fromJsonArray) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $names | toJson -}}
{{- end -}}

{{/* The service reads the API server: it needs its token, and the rights to. */}}
{{- define "asya-sync.readsAPI" -}}
{{- if or (include "asya-sync.readsPods" .) (include "asya-sync.readsNamesakes" .) (include "asya-sync.readSecretNames" . | fromJsonArray) -}}true{{- end -}}
{{- end -}}
