"""What the rendered objects say: roles and replicas, probes, secrets, the migration hook,
security, storage and the bundled servers."""

from __future__ import annotations

import base64

import pytest

from tests.helm.chart import (
    CONFIGS,
    EXTERNAL_DB,
    FULLNAME,
    SECRET_SETTINGS,
    Obj,
    Rendered,
    containers,
    env_of,
    hook_events,
    pod_spec,
    render,
)

SPLIT = CONFIGS["split-external"]
BUNDLED = CONFIGS["split-bundled"]


def maka_container(deployment: Obj) -> Obj:
    [container] = [c for c in pod_spec(deployment)["containers"] if c["name"] == "maka"]
    return container


def workloads(rendered: Rendered) -> list[Obj]:
    return [o for o in rendered.objects if o["kind"] in ("Deployment", "StatefulSet", "Job", "Pod")]


# --- roles and replicas ------------------------------------------------------------------------


def test_default_is_one_all_replica_on_sqlite_that_never_overlaps() -> None:
    rendered = render()
    deployments = rendered.deployments()
    assert set(deployments) == {"all"}
    all_ = deployments["all"]
    assert all_["spec"]["replicas"] == 1
    # Two processes on one SQLite file / embedded index must never run side by side.
    assert all_["spec"]["strategy"] == {"type": "Recreate"}
    assert maka_container(all_)["args"] == ["serve", "--role", "all"]
    assert rendered.configmap()["MAKA_SEARCH_BACKEND"] == "embedded"
    assert "MAKA_DATABASE_URL" not in rendered.get("Secret", FULLNAME).get("data", {})
    assert not rendered.of_kind("Job")  # `maka serve` migrates SQLite itself


def test_split_runs_a_web_and_a_worker_deployment_with_their_replicas() -> None:
    rendered = render({**SPLIT, "web": {"replicas": 3}, "worker": {"replicas": 4}})
    deployments = rendered.deployments()
    assert set(deployments) == {"web", "worker"}
    for role, replicas in (("web", 3), ("worker", 4)):
        deployment = deployments[role]
        assert deployment["metadata"]["name"] == f"{FULLNAME}-{role}"
        assert deployment["spec"]["replicas"] == replicas
        assert maka_container(deployment)["args"] == ["serve", "--role", role]
        assert maka_container(deployment)["command"] == ["maka"]
        assert deployment["spec"]["strategy"]["type"] == "RollingUpdate"
        selector = deployment["spec"]["selector"]["matchLabels"]
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert selector.items() <= labels.items()
        assert selector["app.kubernetes.io/component"] == role
    assert not rendered.of_kind("HorizontalPodAutoscaler")
    assert not rendered.of_kind("PersistentVolumeClaim")


def test_the_service_sends_traffic_to_the_pods_that_receive() -> None:
    for values, role in (({}, "all"), (SPLIT, "web")):
        rendered = render(values)
        service = rendered.get("Service", FULLNAME)
        target = rendered.deployments()[role]["spec"]["template"]["metadata"]["labels"]
        assert service["spec"]["selector"].items() <= target.items()
        [port] = service["spec"]["ports"]
        assert port["targetPort"] == "http"


def test_web_autoscaling_replaces_the_fixed_replica_count() -> None:
    rendered = render({**SPLIT, "web": {"autoscaling": {"enabled": True, "maxReplicas": 9}}})
    web = rendered.deployments()["web"]
    assert "replicas" not in web["spec"]  # the HPA owns it
    assert rendered.deployments()["worker"]["spec"]["replicas"] == 2
    [hpa] = rendered.of_kind("HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": web["metadata"]["name"],
    }
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 9)


def test_many_all_replicas_share_postgresql_and_meilisearch_and_roll() -> None:
    rendered = render(CONFIGS["all-scaled-ws"])
    all_ = rendered.deployments()["all"]
    assert all_["spec"]["replicas"] == 3
    assert all_["spec"]["strategy"]["type"] == "RollingUpdate"
    assert not rendered.of_kind("PersistentVolumeClaim")
    data = [v for v in pod_spec(all_)["volumes"] if v["name"] == "data"]
    assert "emptyDir" in data[0]
    assert rendered.configmap()["MAKA_FEISHU_MODE"] == "ws"


def test_one_pod_disruption_budget_per_deployment() -> None:
    for values in ({}, SPLIT):
        rendered = render(values)
        budgets = {p["metadata"]["name"]: p for p in rendered.of_kind("PodDisruptionBudget")}
        deployments = rendered.of_kind("Deployment")
        assert set(budgets) == {d["metadata"]["name"] for d in deployments}
        for deployment in deployments:
            budget = budgets[deployment["metadata"]["name"]]
            assert budget["spec"]["selector"] == deployment["spec"]["selector"]
            assert budget["spec"]["maxUnavailable"] == 1
    assert not render({"podDisruptionBudget": {"enabled": False}}).of_kind("PodDisruptionBudget")


# --- probes and the HTTP port ------------------------------------------------------------------


@pytest.mark.parametrize("config", CONFIGS)
def test_probes_use_healthz_for_liveness_and_readyz_for_readiness(config: str) -> None:
    rendered = render(CONFIGS[config])
    assert rendered.configmap()["MAKA_HTTP_HOST"] == "0.0.0.0"
    port = int(rendered.configmap()["MAKA_HTTP_PORT"])
    for deployment in rendered.of_kind("Deployment"):
        container = maka_container(deployment)
        assert container["ports"] == [{"name": "http", "containerPort": port, "protocol": "TCP"}]
        paths = {
            probe: (container[probe]["httpGet"]["path"], container[probe]["httpGet"]["port"])
            for probe in ("startupProbe", "livenessProbe", "readinessProbe")
        }
        assert paths == {
            "startupProbe": ("/healthz", "http"),
            "livenessProbe": ("/healthz", "http"),
            "readinessProbe": ("/readyz", "http"),
        }


# --- settings and secrets ----------------------------------------------------------------------

SECRET_VALUES = {
    "feishu": {
        "appId": "cli_public_app_id",
        "appSecret": "s3cret-feishu-app",
        "encryptKey": "s3cret-encrypt-key",
        "verificationToken": "s3cret-verification",
    },
    "model": {
        "baseUrl": "https://api.example.com/v1",
        "name": "some-model",
        "apiKey": "s3cret-model-key",
    },
    "database": {"backend": "postgresql", "url": "postgresql://u:s3cret-db-pass@pg:5432/maka"},
    "search": {
        "backend": "meilisearch",
        "meiliUrl": "http://meili:7700",
        "meiliKey": "s3cret-meili-key",
    },
    "email": {"password": "s3cret-imap-pass", "smtpPassword": "s3cret-smtp-pass"},
}
SECRETS = {
    "MAKA_FEISHU_APP_SECRET": "s3cret-feishu-app",
    "MAKA_FEISHU_ENCRYPT_KEY": "s3cret-encrypt-key",
    "MAKA_FEISHU_VERIFICATION_TOKEN": "s3cret-verification",
    "MAKA_MODEL_API_KEY": "s3cret-model-key",
    "MAKA_DATABASE_URL": "postgresql://u:s3cret-db-pass@pg:5432/maka",
    "MAKA_MEILI_KEY": "s3cret-meili-key",
    "MAKA_EMAIL_PASSWORD": "s3cret-imap-pass",
    "MAKA_SMTP_PASSWORD": "s3cret-smtp-pass",
}


@pytest.mark.parametrize("topology", ["all", "split"])
def test_no_secret_value_outside_a_secret(topology: str) -> None:
    rendered = render({**SECRET_VALUES, "topology": topology})
    config = rendered.configmap()
    assert not set(config) & set(SECRET_SETTINGS)
    assert config["MAKA_FEISHU_APP_ID"] == "cli_public_app_id"
    assert config["MAKA_MODEL_NAME"] == "some-model"
    assert config["MAKA_MEILI_URL"] == "http://meili:7700"
    assert config["MAKA_CONSOLE"] == "false"  # the console page has no login
    for obj in rendered.objects:
        if obj["kind"] == "Secret":
            continue
        text = str(obj)
        leaked = [name for name, value in SECRETS.items() if value in text]
        assert leaked == [], f"{obj['kind']}/{obj['metadata']['name']} holds {leaked}"
    # ... and every one of them is in the release's Secret, under its variable name.
    secret = rendered.get("Secret", FULLNAME)
    decoded = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert decoded == SECRETS


@pytest.mark.parametrize("config", ["default", "split-external"])
def test_each_secret_setting_reaches_the_pods_from_a_secret_key(config: str) -> None:
    rendered = render(CONFIGS[config])
    for deployment in rendered.of_kind("Deployment"):
        container = maka_container(deployment)
        assert container["envFrom"] == [{"configMapRef": {"name": FULLNAME}}]
        env = env_of(container)
        for name in SECRET_SETTINGS:
            ref = env[name]["valueFrom"]["secretKeyRef"]
            assert ref == {"name": FULLNAME, "key": name, "optional": True}
            assert "value" not in env[name]


def test_an_existing_secret_replaces_the_charts_own() -> None:
    rendered = render(CONFIGS["split-external-existing-secret-hpa-ingress"])
    assert not [s for s in rendered.of_kind("Secret")]
    for deployment in rendered.of_kind("Deployment"):
        env = env_of(maka_container(deployment))
        for name in SECRET_SETTINGS:
            assert env[name]["valueFrom"]["secretKeyRef"]["name"] == "maka-credentials"


def test_plain_settings_land_in_the_configmap_under_their_maka_names() -> None:
    rendered = render(
        {
            "settings": {
                "owner": "ou_owner",
                "admins": ["ou_a", "ou_b"],
                "openDms": True,
                "timezone": "Asia/Shanghai",
                "shutdownGrace": 45,
                "logLevel": "DEBUG",
                "publicUrl": "https://maka.example.com",
                "trustedProxies": ["10.0.0.0/8", "fd00::/8"],
                "extra": {"MAKA_CONTEXT_TOKENS": 12000, "MAKA_BOT_DEBOUNCE": "0.8"},
            },
            "feishu": {"domain": "https://open.larksuite.com", "maxEventAge": 600},
            "model": {"timeout": 90},
        }
    )
    config = rendered.configmap()
    assert all(key.startswith("MAKA_") for key in config)
    assert all(isinstance(value, str) for value in config.values())
    expected = {
        "MAKA_DATA_DIR": "/data",
        "MAKA_OWNER": "ou_owner",
        "MAKA_ADMINS": "ou_a,ou_b",
        "MAKA_OPEN_DMS": "true",
        "MAKA_TIMEZONE": "Asia/Shanghai",
        "MAKA_SHUTDOWN_GRACE": "45",
        "MAKA_LOG_LEVEL": "DEBUG",
        "MAKA_PUBLIC_URL": "https://maka.example.com",
        "MAKA_TRUSTED_PROXIES": "10.0.0.0/8,fd00::/8",
        "MAKA_CONTEXT_TOKENS": "12000",
        "MAKA_BOT_DEBOUNCE": "0.8",
        "MAKA_FEISHU_DOMAIN": "https://open.larksuite.com",
        "MAKA_FEISHU_MAX_EVENT_AGE": "600",
        "MAKA_MODEL_TIMEOUT": "90",
    }
    assert expected.items() <= config.items()
    # Pods stop after the service's own drain time, not before.
    [deployment] = rendered.of_kind("Deployment")
    assert pod_spec(deployment)["terminationGracePeriodSeconds"] > 45


def test_a_settings_change_rolls_the_pods() -> None:
    def checksums(values: Obj) -> dict[str, str]:
        annotations: dict[str, str] = render(values).deployments()["all"]["spec"]["template"][
            "metadata"
        ]["annotations"]
        return annotations

    base = checksums({})
    changed_config = checksums({"settings": {"logLevel": "DEBUG"}})
    changed_secret = checksums({"model": {"apiKey": "another"}})
    assert changed_config["checksum/config"] != base["checksum/config"]
    assert changed_config["checksum/secret"] == base["checksum/secret"]
    assert changed_secret["checksum/secret"] != base["checksum/secret"]


# --- the migration hook ------------------------------------------------------------------------


def test_migration_hook_runs_maka_migrate_before_install_and_upgrade() -> None:
    rendered = render(SPLIT)
    [job] = rendered.of_kind("Job")
    assert hook_events(job) == {"pre-install", "pre-upgrade"}
    annotations = job["metadata"]["annotations"]
    assert "before-hook-creation" in annotations["helm.sh/hook-delete-policy"]
    [container] = pod_spec(job)["containers"]
    assert (container["command"], container["args"]) == (["maka"], ["migrate"])
    assert pod_spec(job)["restartPolicy"] == "Never"
    # Before install the release's Secret does not exist: the URL comes from a hook Secret
    # created just before the Job (lower weight).
    url_ref = env_of(container)["MAKA_DATABASE_URL"]["valueFrom"]["secretKeyRef"]
    hook_secret = rendered.get("Secret", url_ref["name"])
    assert hook_events(hook_secret) == hook_events(job)
    assert int(hook_secret["metadata"]["annotations"]["helm.sh/hook-weight"]) < int(
        annotations["helm.sh/hook-weight"]
    )
    url = base64.b64decode(hook_secret["data"][url_ref["key"]]).decode()
    assert url == EXTERNAL_DB["database"]["url"]
    assert "optional" not in url_ref
    # The Deployments themselves are no hooks: they roll after the Job succeeded.
    assert all(not hook_events(d) for d in rendered.of_kind("Deployment"))


def test_migration_hook_reads_an_existing_secret_directly() -> None:
    rendered = render(CONFIGS["split-external-existing-secret-hpa-ingress"])
    [job] = rendered.of_kind("Job")
    [container] = pod_spec(job)["containers"]
    ref = env_of(container)["MAKA_DATABASE_URL"]["valueFrom"]["secretKeyRef"]
    assert ref == {"name": "maka-credentials", "key": "MAKA_DATABASE_URL"}
    assert not rendered.of_kind("Secret")


def test_bundled_postgresql_is_migrated_by_the_pods_on_install_and_the_hook_on_upgrade() -> None:
    rendered = render(BUNDLED)
    [job] = rendered.of_kind("Job")
    # The bundled server does not exist before install: a pre-install hook would wait forever.
    assert hook_events(job) == {"pre-upgrade"}
    for deployment in rendered.of_kind("Deployment"):
        [init] = pod_spec(deployment)["initContainers"]
        assert init["args"] == ["migrate"]
    for container in [*pod_spec(job)["containers"], maka_container(rendered.deployments()["web"])]:
        env = env_of(container)
        ref = env["POSTGRES_PASSWORD"]["valueFrom"]["secretKeyRef"]
        assert ref == {"name": f"{FULLNAME}-postgresql", "key": "postgres-password"}
        assert env["MAKA_DATABASE_URL"]["value"] == (
            f"postgresql://maka:$(POSTGRES_PASSWORD)@{FULLNAME}-postgresql:5432/maka"
        )
        # $(VAR) expansion only sees variables defined earlier in the list.
        names = list(env)
        assert names.index("POSTGRES_PASSWORD") < names.index("MAKA_DATABASE_URL")


# --- security and storage ----------------------------------------------------------------------


@pytest.mark.parametrize("config", CONFIGS)
def test_pods_run_non_root_on_a_read_only_root_filesystem(config: str) -> None:
    rendered = render(CONFIGS[config])
    for obj in workloads(rendered):
        spec = pod_spec(obj)
        where = f"{obj['kind']}/{obj['metadata']['name']}"
        assert spec["securityContext"]["runAsNonRoot"] is True, where
        assert spec["automountServiceAccountToken"] is False, where
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        for container in containers(obj):
            context = container["securityContext"]
            assert context["readOnlyRootFilesystem"] is True, where
            assert context["allowPrivilegeEscalation"] is False, where
            assert context["capabilities"]["drop"] == ["ALL"], where
            assert "resources" in container, where
            mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts", [])}
            if obj["kind"] == "Pod":
                continue  # the helm test pod only runs a one-line HTTP check
            assert "emptyDir" in volumes[mounts["/tmp"]], where  # Python needs a writable /tmp
            if container["image"].startswith("maka-assistant:"):
                assert "/data" in mounts, where  # MAKA_DATA_DIR: jieba cache, SQLite, index
                assert env_of(container)["PYTHONDONTWRITEBYTECODE"]["value"] == "1"


def test_sqlite_data_lives_on_a_kept_claim() -> None:
    rendered = render()
    [claim] = rendered.of_kind("PersistentVolumeClaim")
    assert claim["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    assert claim["spec"]["resources"]["requests"]["storage"] == "5Gi"
    volumes = {v["name"]: v for v in pod_spec(rendered.deployments()["all"])["volumes"]}
    assert volumes["data"]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    assert "emptyDir" in volumes["tmp"]

    existing = render({"persistence": {"existingClaim": "my-claim"}})
    assert not existing.of_kind("PersistentVolumeClaim")
    volumes = {v["name"]: v for v in pod_spec(existing.deployments()["all"])["volumes"]}
    assert volumes["data"]["persistentVolumeClaim"]["claimName"] == "my-claim"


def test_image_and_entry_point() -> None:
    rendered = render({"image": {"repository": "registry.example.com/maka", "tag": "1.2.3"}})
    container = maka_container(rendered.deployments()["all"])
    assert container["image"] == "registry.example.com/maka:1.2.3"
    # By default the tag is the chart's appVersion.
    assert maka_container(render().deployments()["all"])["image"] == "maka-assistant:0.1.0"


# --- bundled servers, ingress ------------------------------------------------------------------


def test_bundled_servers_are_statefulsets_with_claims_and_a_master_key() -> None:
    rendered = render(BUNDLED)
    postgres = rendered.get("StatefulSet", f"{FULLNAME}-postgresql")
    meili = rendered.get("StatefulSet", f"{FULLNAME}-meilisearch")
    for statefulset in (postgres, meili):
        [claim] = statefulset["spec"]["volumeClaimTemplates"]
        assert claim["metadata"]["name"] == "data"
        service = rendered.get("Service", statefulset["metadata"]["name"])
        assert service["spec"]["selector"] == statefulset["spec"]["selector"]["matchLabels"]

    [meili_container] = pod_spec(meili)["containers"]
    meili_env = env_of(meili_container)
    key_ref = meili_env["MEILI_MASTER_KEY"]["valueFrom"]["secretKeyRef"]
    assert meili_env["MEILI_ENV"]["value"] == "production"
    master_key = rendered.get("Secret", key_ref["name"])["data"][key_ref["key"]]
    assert base64.b64decode(master_key).decode() == BUNDLED["meilisearch"]["masterKey"]

    config = rendered.configmap()
    assert config["MAKA_MEILI_URL"] == f"http://{FULLNAME}-meilisearch:7700"
    assert config["MAKA_SEARCH_BACKEND"] == "meilisearch"
    for deployment in rendered.of_kind("Deployment"):
        env = env_of(maka_container(deployment))
        assert env["MAKA_MEILI_KEY"]["valueFrom"]["secretKeyRef"] == key_ref

    password = rendered.get("Secret", f"{FULLNAME}-postgresql")["data"]["postgres-password"]
    assert base64.b64decode(password).decode() == BUNDLED["postgresql"]["auth"]["password"]


def test_bundled_meilisearch_persistence_can_be_turned_off() -> None:
    values = {
        **BUNDLED,
        "meilisearch": {**BUNDLED["meilisearch"], "persistence": {"enabled": False}},
    }
    meili = render(values).get("StatefulSet", f"{FULLNAME}-meilisearch")
    assert "volumeClaimTemplates" not in meili["spec"]
    volumes = {v["name"]: v for v in pod_spec(meili)["volumes"]}
    assert "emptyDir" in volumes["data"]


def test_ingress_exposes_only_the_webhook_of_the_service() -> None:
    rendered = render(CONFIGS["split-external-existing-secret-hpa-ingress"])
    [ingress] = rendered.of_kind("Ingress")
    [rule] = ingress["spec"]["rules"]
    assert rule["host"] == "maka.example.com"
    [path] = rule["http"]["paths"]
    assert path["path"] == "/feishu/events"
    assert path["backend"]["service"] == {"name": FULLNAME, "port": {"name": "http"}}
    assert ingress["spec"]["ingressClassName"] == "nginx"
    assert not render().of_kind("Ingress")
