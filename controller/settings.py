"""Operator configuration, read from MCPEXEC_* environment variables (the Helm chart sets them)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class OperatorSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MCPEXEC_", extra="ignore")

    runtime_image: str = "mcpexec/runtime:0.1.0"
    image_pull_policy: str = "IfNotPresent"
    gateway_url: str = "http://mcpexec-gateway.mcpexec-system.svc:8000"
    gateway_namespace: str = "mcpexec-system"
    gateway_pod_labels: dict[str, str] = Field(default_factory=lambda: {"app.kubernetes.io/name": "mcpexec-gateway"})
    gateway_port: int = 8000
    gateway_audience: str = "mcpexec-gateway"
    token_expiration_seconds: int = Field(default=3600, ge=600)
    metrics_port: int = 9090
    sweep_interval_seconds: float = Field(default=10, gt=0)
