"""The chat page's server side: its files, its security headers, and GET /client-config (which must
tell a browser where to sign in without ever handing it a secret)."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from backend.api.app import create_app
from backend.api.page import WEBAPP_DIR
from backend.config import Settings

SUPABASE: dict[str, Any] = {
    "auth_mode": "supabase",
    "supabase_url": "https://abcd.supabase.co/",
    "supabase_anon_key": "sb_publishable_abc123",
    "supabase_jwt_secret": "j" * 40,
    "service_api_key": "k" * 40,
}


def unstarted_client(make_services, **overrides) -> TestClient:
    """No lifespan: a Supabase-mode app would fetch the project's signing keys from the network."""
    return TestClient(create_app(services=make_services(**overrides)))


def test_the_page_is_served_at_the_root_with_a_policy_that_runs_only_its_own_scripts(client):
    page = client.get("/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert '<script type="module" src="/app/app.js">' in page.text
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy
    assert "connect-src 'self';" in policy  # auth off: the page talks to this origin only
    assert "frame-ancestors 'none'" in policy
    assert client.head("/").status_code == 200


def test_every_file_the_page_loads_is_served_fresh_with_its_type(client):
    index = (WEBAPP_DIR / "index.html").read_text(encoding="utf-8")
    modules = {p.name for p in WEBAPP_DIR.glob("*.js")}
    imported = set()
    for module in modules:
        text = (WEBAPP_DIR / module).read_text(encoding="utf-8")
        imported |= set(re.findall(r'from "\./([\w-]+\.js)"', text))
    assert imported <= modules  # no module imports a file the package lacks
    assets = set(re.findall(r'(?:src|href)="/app/([\w.-]+)"', index)) | imported
    for name in sorted(assets):
        response = client.get(f"/app/{name}")
        assert response.status_code == 200, name
        assert response.headers["cache-control"] == "no-cache", name
        expected = {"js": "javascript", "css": "text/css", "svg": "image/svg+xml"}[name.rsplit(".", 1)[1]]
        assert expected in response.headers["content-type"], name
    assert client.get("/app/missing.js").status_code == 404


def test_client_config_without_auth_says_so_and_names_the_limits(client):
    config = client.get("/client-config").json()
    assert config["auth_mode"] == "none"
    assert config["supabase_url"] is None
    assert config["supabase_anon_key"] is None
    assert config["max_message_chars"] == 2000
    assert config["features"] == {"research": True, "web": False}


def test_client_config_with_supabase_gives_the_project_and_anon_key_and_no_secret(make_services):
    client = unstarted_client(make_services, **SUPABASE)
    response = client.get("/client-config")  # no token: the page needs it before anyone signs in
    assert response.status_code == 200
    config = response.json()
    assert config["supabase_url"] == "https://abcd.supabase.co"
    assert config["supabase_anon_key"] == "sb_publishable_abc123"
    assert "j" * 40 not in response.text
    assert "k" * 40 not in response.text
    # The page may call Supabase Auth, and nothing else off this origin.
    policy = client.get("/").headers["content-security-policy"]
    assert "connect-src 'self' https://abcd.supabase.co;" in policy


def test_the_research_toggle_follows_the_endpoint(make_services):
    services = make_services()
    app = create_app(services=services)
    assert TestClient(app).get("/client-config").json()["features"]["research"] is True
    # An app that does not serve /research (e.g. a deployment that leaves it out) hides the toggle.
    app = create_app(services=services)
    schema = app.openapi()
    schema["paths"] = {path: ops for path, ops in schema["paths"].items() if not path.startswith("/research")}
    assert TestClient(app).get("/client-config").json()["features"]["research"] is False


def _jwt(payload: dict) -> str:
    def part(data: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part(payload)}.c2lnbmF0dXJl"


@pytest.mark.parametrize(
    "key",
    [_jwt({"iss": "supabase", "role": "service_role"}), "sb_secret_abcdefghijklmnop", "k" * 40],
    ids=["legacy-service-role-jwt", "sb-secret", "the-service-api-key"],
)
def test_a_secret_key_as_the_anon_key_is_refused_at_start_up(key):
    with pytest.raises(ValidationError, match="SUPABASE_ANON_KEY holds a secret key"):
        Settings(_env_file=None, **{**SUPABASE, "supabase_anon_key": key})


def test_a_legacy_anon_jwt_is_accepted():
    anon = _jwt({"iss": "supabase", "role": "anon"})
    assert Settings(_env_file=None, **{**SUPABASE, "supabase_anon_key": anon}).supabase_anon_key == anon


def test_every_ui_text_exists_in_chinese_and_english():
    source = (WEBAPP_DIR / "i18n.js").read_text(encoding="utf-8")
    en = source[source.index("  en: {") : source.index("  zh: {")]
    zh = source[source.index("  zh: {") : source.index("const STORAGE_KEY")]
    keys = re.compile(r"^    (\w+): ", re.M)
    assert set(keys.findall(en)) == set(keys.findall(zh))
    used = set()
    for module in WEBAPP_DIR.glob("*"):
        text = module.read_text(encoding="utf-8")
        used |= set(re.findall(r'\bt\("(\w+)"', text)) | set(re.findall(r'data-i18n[\w-]*="(\w+)"', text))
    assert used - set(keys.findall(en)) == set()  # no text shown by its key
