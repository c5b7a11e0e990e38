{{- define "mcpexec.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}{{ .Release.Name | trunc 50 | trimSuffix "-" }}{{- else -}}{{ printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" }}{{- end -}}
{{- end -}}

{{- define "mcpexec.commonLabels" -}}
app.kubernetes.io/part-of: mcpexec
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Labels of the release's objects that belong to no single component (RBAC, NetworkPolicies...). */}}
{{- define "mcpexec.labels" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
{{ include "mcpexec.commonLabels" . }}
{{- end -}}

{{/* Selector labels of one component: (dict "root" $ "component" "gateway") */}}
{{- define "mcpexec.selector" -}}
app.kubernetes.io/name: mcpexec-{{ .component }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- end -}}

{{/* Labels of one component's Deployment and Service: its selector labels and the common ones. */}}
{{- define "mcpexec.componentLabels" -}}
{{ include "mcpexec.selector" . }}
{{ include "mcpexec.commonLabels" .root }}
{{- end -}}

{{/* An image reference: (dict "root" $ "image" .Values.images.gateway); the tag defaults to the appVersion. */}}
{{- define "mcpexec.image" -}}
{{ .image.repository }}:{{ .image.tag | default .root.Chart.AppVersion }}
{{- end -}}

{{/* The pod's imagePullSecrets from images.pullSecrets (nothing when there are none). */}}
{{- define "mcpexec.imagePullSecrets" -}}
{{- with .Values.images.pullSecrets }}
imagePullSecrets:
{{- range . }}
  - name: {{ . }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "mcpexec.podSecurity" -}}
runAsNonRoot: true
runAsUser: 65534
runAsGroup: 65534
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "mcpexec.containerSecurity" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
privileged: false
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* REDIS_URL of the gateway: the bundled Redis (password from its Secret), or exactly one external source. */}}
{{- define "mcpexec.redisEnv" -}}
{{- $external := .Values.redis.external -}}
{{- if .Values.redis.enabled -}}
{{- if or $external.url $external.secretName -}}
{{- fail "redis.external.* is set but redis.enabled is true: set redis.enabled=false to use an external Redis" -}}
{{- end -}}
- name: REDIS_PASSWORD
  valueFrom:
    secretKeyRef: {{ include "mcpexec.secretRef" (dict "root" . "of" .Values.redis.auth "values" "redis.auth" "generated" "redis" "key" "password") }}
- {name: REDIS_URL, value: {{ printf "redis://:$(REDIS_PASSWORD)@%s-redis:6379/0" (include "mcpexec.fullname" .) | quote }}}
{{- else if and $external.url $external.secretName -}}
{{- fail "set only one of redis.external.url and redis.external.secretName" -}}
{{- else if $external.secretName -}}
- name: REDIS_URL
  valueFrom:
    secretKeyRef: {name: {{ $external.secretName }}, key: {{ $external.secretKey }}}
{{- else if $external.url -}}
- {name: REDIS_URL, value: {{ $external.url | quote }}}
{{- else -}}
{{- fail "redis.enabled is false: set redis.external.secretName (a Secret holding the URL) or redis.external.url" -}}
{{- end -}}
{{- end -}}

{{/*
A Secret the chart's pods read a credential from, as a secretKeyRef: (dict "root" $ "of" <auth values> "values"
<their path, for messages> "generated" <suffix> "key" <key>). With `existingSecret`, that one (its key `existingSecretKey`); with an explicit `value`, the
chart's own Secret <fullname>-<suffix>-auth; otherwise <fullname>-<suffix>, which the operator generates once at start
(MCPEXEC_GENERATED_SECRETS) and never changes. Nothing here is random: `helm template` renders the same every time
(what Argo CD compares), and no sync rotates a credential.
*/}}
{{- define "mcpexec.secretRef" -}}
{{- $name := printf "%s-%s" (include "mcpexec.fullname" .root) .generated -}}
{{- if and .of.existingSecret .of.value -}}
{{- fail (printf "set only one of %s.existingSecret and %s.value" .values .values) -}}
{{- else if .of.existingSecret -}}
{name: {{ .of.existingSecret }}, key: {{ .of.existingSecretKey | default .key }}}
{{- else if .of.value -}}
{name: {{ $name }}-auth, key: {{ .key }}}
{{- else -}}
{name: {{ $name }}, key: {{ .key }}}
{{- end -}}
{{- end -}}

{{/* What a credential's pods must restart on: where it comes from and, if explicit, its value (hashed). */}}
{{- define "mcpexec.secretChecksum" -}}
{{- dict "existingSecret" .existingSecret "existingSecretKey" .existingSecretKey "value" .value | toJson | sha256sum -}}
{{- end -}}

{{/* The Secrets the operator generates (JSON for MCPEXEC_GENERATED_SECRETS): those with no existingSecret or value. */}}
{{- define "mcpexec.generatedSecrets" -}}
{{- $out := list -}}
{{- $auth := .Values.redis.auth -}}
{{- if and .Values.redis.enabled (not $auth.existingSecret) (not $auth.value) -}}
{{- $out = append $out (dict "name" (printf "%s-redis" (include "mcpexec.fullname" .)) "key" "password") -}}
{{- end -}}
{{- $seal := .Values.gateway.skillsSealKey -}}
{{- if and (not $seal.existingSecret) (not $seal.value) -}}
{{- $out = append $out (dict "name" (printf "%s-gateway-skills-seal" (include "mcpexec.fullname" .)) "key" "key" "bytes" 36) -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/* The standard OpenTelemetry variables of a component ("service": its service name) when tracing is on. */}}
{{- define "mcpexec.tracingEnv" -}}
{{- if .root.Values.tracing.otlpEndpoint }}
- {name: OTEL_EXPORTER_OTLP_ENDPOINT, value: {{ .root.Values.tracing.otlpEndpoint | quote }}}
- {name: OTEL_SERVICE_NAME, value: {{ .service | quote }}}
{{- end }}
{{- end -}}
