{{/* Names and labels. */}}
{{- define "maka.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "maka.fullname" -}}
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

{{- define "maka.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: {{ include "maka.name" . }}
{{- end -}}

{{/* Selector labels of one component: (dict "root" $ "component" "web"). */}}
{{- define "maka.selectorLabels" -}}
app.kubernetes.io/name: {{ include "maka.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "maka.componentLabels" -}}
{{ include "maka.labels" .root }}
{{ include "maka.selectorLabels" . }}
{{- end -}}

{{- define "maka.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The roles that get a Deployment. */}}
{{- define "maka.roles" -}}
{{- if eq .Values.topology "split" -}}web worker{{- else -}}all{{- end -}}
{{- end -}}

{{/* "true" when state lives in the pod's data dir (SQLite or the embedded index): one process only. */}}
{{- define "maka.singleProcess" -}}
{{- if or (eq .Values.database.backend "sqlite") (eq .Values.search.backend "embedded") -}}true{{- end -}}
{{- end -}}

{{/* "true" when /data is a PersistentVolumeClaim. */}}
{{- define "maka.dataClaim" -}}
{{- if and .Values.persistence.enabled (include "maka.singleProcess" .) (eq .Values.topology "all") -}}true{{- end -}}
{{- end -}}

{{- define "maka.dataClaimName" -}}
{{- default (printf "%s-data" (include "maka.fullname" .)) .Values.persistence.existingClaim -}}
{{- end -}}

{{- define "maka.secretName" -}}
{{- default (include "maka.fullname" .) .Values.existingSecret -}}
{{- end -}}

{{- define "maka.postgresql.fullname" -}}
{{- printf "%s-postgresql" (include "maka.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "maka.postgresql.secretName" -}}
{{- default (include "maka.postgresql.fullname" .) .Values.postgresql.auth.existingSecret -}}
{{- end -}}

{{- define "maka.meilisearch.fullname" -}}
{{- printf "%s-meilisearch" (include "maka.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "maka.meilisearch.secretName" -}}
{{- default (include "maka.meilisearch.fullname" .) .Values.meilisearch.existingSecret -}}
{{- end -}}

{{/* Seconds a pod gets to stop: the service's own drain time plus room to spare. */}}
{{- define "maka.terminationGracePeriod" -}}
{{- add (int (ceil .Values.settings.shutdownGrace)) 15 -}}
{{- end -}}

{{/*
The plain settings (ConfigMap data), as YAML. Secret settings never appear here.
*/}}
{{- define "maka.settings" -}}
{{- $v := .Values -}}
MAKA_HTTP_HOST: "0.0.0.0"
MAKA_HTTP_PORT: "8080"
MAKA_DATA_DIR: /data
MAKA_CONSOLE: "false"
MAKA_SEARCH_BACKEND: {{ $v.search.backend | quote }}
{{- if $v.meilisearch.enabled }}
MAKA_MEILI_URL: {{ printf "http://%s:7700" (include "maka.meilisearch.fullname" .) | quote }}
{{- else if $v.search.meiliUrl }}
MAKA_MEILI_URL: {{ $v.search.meiliUrl | quote }}
{{- end }}
MAKA_FEISHU_MODE: {{ $v.feishu.mode | quote }}
MAKA_FEISHU_DOMAIN: {{ $v.feishu.domain | quote }}
MAKA_FEISHU_MAX_EVENT_AGE: {{ $v.feishu.maxEventAge | quote }}
{{- with $v.feishu.appId }}
MAKA_FEISHU_APP_ID: {{ . | quote }}
{{- end }}
{{- with $v.model.baseUrl }}
MAKA_MODEL_BASE_URL: {{ . | quote }}
{{- end }}
{{- with $v.model.name }}
MAKA_MODEL_NAME: {{ . | quote }}
{{- end }}
MAKA_MODEL_TIMEOUT: {{ $v.model.timeout | quote }}
{{- with $v.settings.owner }}
MAKA_OWNER: {{ . | quote }}
{{- end }}
{{- with $v.settings.admins }}
MAKA_ADMINS: {{ join "," . | quote }}
{{- end }}
MAKA_OPEN_DMS: {{ $v.settings.openDms | quote }}
MAKA_TIMEZONE: {{ $v.settings.timezone | quote }}
MAKA_SHUTDOWN_GRACE: {{ $v.settings.shutdownGrace | quote }}
MAKA_LOG_LEVEL: {{ $v.settings.logLevel | quote }}
{{- with $v.settings.publicUrl }}
MAKA_PUBLIC_URL: {{ . | quote }}
{{- end }}
{{- with $v.settings.trustedProxies }}
MAKA_TRUSTED_PROXIES: {{ join "," . | quote }}
{{- end }}
{{- range $key, $value := $v.settings.extra }}
{{ $key }}: {{ $value | toString | quote }}
{{- end }}
{{- end -}}

{{/* The secret settings the chart's own Secret holds, as YAML (only those given). */}}
{{- define "maka.secretData" -}}
{{- $v := .Values -}}
{{- $data := dict
  "MAKA_FEISHU_APP_SECRET" $v.feishu.appSecret
  "MAKA_FEISHU_ENCRYPT_KEY" $v.feishu.encryptKey
  "MAKA_FEISHU_VERIFICATION_TOKEN" $v.feishu.verificationToken
  "MAKA_MODEL_API_KEY" $v.model.apiKey
  "MAKA_DATABASE_URL" $v.database.url
  "MAKA_MEILI_KEY" $v.search.meiliKey
  "MAKA_EMAIL_PASSWORD" $v.email.password
  "MAKA_SMTP_PASSWORD" $v.email.smtpPassword -}}
{{- range $key, $value := $data }}
{{- if $value }}
{{ $key }}: {{ $value | b64enc | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/*
Secret environment variables, each read from a Secret by key. The bundled servers' credentials
come from their own Secrets; the database URL of the bundled PostgreSQL is put together from its
password by Kubernetes ($(POSTGRES_PASSWORD) expansion).
*/}}
{{- define "maka.secretEnv" -}}
{{- $secret := include "maka.secretName" . -}}
{{- range $key := list "MAKA_FEISHU_APP_SECRET" "MAKA_FEISHU_ENCRYPT_KEY" "MAKA_FEISHU_VERIFICATION_TOKEN" "MAKA_MODEL_API_KEY" "MAKA_EMAIL_PASSWORD" "MAKA_SMTP_PASSWORD" "MAKA_ADMIN_TOKEN" "MAKA_SECRET_KEY" }}
- name: {{ $key }}
  valueFrom:
    secretKeyRef: {name: {{ $secret }}, key: {{ $key }}, optional: true}
{{- end }}
{{- if .Values.postgresql.enabled }}
{{ include "maka.bundledDatabaseEnv" . }}
{{- else }}
- name: MAKA_DATABASE_URL
  valueFrom:
    secretKeyRef: {name: {{ $secret }}, key: MAKA_DATABASE_URL, optional: true}
{{- end }}
{{- if .Values.meilisearch.enabled }}
- name: MAKA_MEILI_KEY
  valueFrom:
    secretKeyRef: {name: {{ include "maka.meilisearch.secretName" . }}, key: MEILI_MASTER_KEY}
{{- else }}
- name: MAKA_MEILI_KEY
  valueFrom:
    secretKeyRef: {name: {{ $secret }}, key: MAKA_MEILI_KEY, optional: true}
{{- end }}
{{- end -}}

{{/* MAKA_DATABASE_URL of the bundled PostgreSQL, put together by Kubernetes from its password. */}}
{{- define "maka.bundledDatabaseEnv" -}}
- name: POSTGRES_PASSWORD
  valueFrom:
    secretKeyRef: {name: {{ include "maka.postgresql.secretName" . }}, key: postgres-password}
- name: MAKA_DATABASE_URL
  value: {{ printf "postgresql://%s:$(POSTGRES_PASSWORD)@%s:5432/%s" .Values.postgresql.auth.username (include "maka.postgresql.fullname" .) .Values.postgresql.auth.database | quote }}
{{- end -}}

{{/* Environment every maka container gets besides the ConfigMap. */}}
{{- define "maka.baseEnv" -}}
- name: PYTHONDONTWRITEBYTECODE
  value: "1"
- name: PYTHONUNBUFFERED
  value: "1"
- name: HOME
  value: /tmp
{{- end -}}

{{/* Pod scheduling and identity shared by every maka pod. */}}
{{- define "maka.podCommon" -}}
automountServiceAccountToken: false
{{- with .Values.serviceAccountName }}
serviceAccountName: {{ . }}
{{- end }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
The container that runs `maka migrate`: the hook Job's, and the init container of the pods when
PostgreSQL is bundled. It needs the database URL only.
*/}}
{{- define "maka.migrateContainer" -}}
- name: migrate
  image: {{ include "maka.image" . }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  command: [maka]
  args: [migrate]
  env:
    {{- include "maka.baseEnv" . | nindent 4 }}
    - name: MAKA_DATA_DIR
      value: /data
    - name: MAKA_LOG_LEVEL
      value: {{ .Values.settings.logLevel | quote }}
    {{- if .Values.postgresql.enabled }}
    {{- include "maka.bundledDatabaseEnv" . | nindent 4 }}
    {{- else }}
    - name: MAKA_DATABASE_URL
      valueFrom:
        secretKeyRef:
          # Before install the release's own Secret does not exist yet: the hook has its own.
          name: {{ default (printf "%s-migrate" (include "maka.fullname" .)) .Values.existingSecret }}
          key: MAKA_DATABASE_URL
    {{- end }}
  resources:
    {{- toYaml .Values.migration.resources | nindent 4 }}
  securityContext:
    {{- toYaml .Values.securityContext | nindent 4 }}
  volumeMounts:
    - {name: tmp, mountPath: /tmp}
    - {name: data, mountPath: /data}
{{- end -}}
