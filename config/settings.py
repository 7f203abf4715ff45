"""KernelBench-Verified settings: one env-driven file (healthchecks style; its helpers are in config/env.py).

The defaults need no server: SQLite under var/ and Celery's filesystem transport under var/celery, which a web
process and a separate worker process on one host share. DATABASE_URL switches to PostgreSQL and CELERY_BROKER_URL
to Redis or RabbitMQ. Every setting is listed in the README.
"""

from __future__ import annotations

import os
import secrets
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config.env import KEYLESS_COMMANDS, envbool, envint, keyless_command, private_folder

BASE_DIR = Path(__file__).resolve().parent.parent


def type_checker(argv: list[str]) -> bool:
    """mypy (`mypy`, `dmypy`, `python -m mypy`): the django-stubs plugin reads these settings and serves nothing."""
    program = Path(argv[0]) if argv else Path()
    checkers = {"mypy", "dmypy"}
    return program.name in checkers or (program.name == "__main__.py" and program.parent.name in checkers)


DEBUG = envbool("DJANGO_DEBUG", "False")
SECRET_KEY = os.getenv("SECRET_KEY", "")
if not SECRET_KEY:
    if DEBUG:
        SECRET_KEY = "insecure-development-key-only-for-debug"  # only ever used with DEBUG on
    elif keyless_command(sys.argv) or type_checker(sys.argv):
        SECRET_KEY = secrets.token_urlsafe(50)  # this process only: nothing it could sign is kept
    else:
        raise ImproperlyConfigured(
            "SECRET_KEY is required unless DJANGO_DEBUG=True (web server and workers; "
            f"`manage.py` commands that need none: {', '.join(sorted(KEYLESS_COMMANDS - {'help'}))})"
        )

ALLOWED_HOSTS = [h.strip() for h in os.getenv("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",") if h]
CSRF_TRUSTED_ORIGINS = [o for o in os.getenv("CSRF_TRUSTED_ORIGINS", "").split(",") if o]

# --- HTTPS (production) -----------------------------------------------------------------------------------------
# SECURE_HTTPS=True: the site is served only over HTTPS. Plain HTTP is redirected, browsers are told to use HTTPS
# for a year (HSTS, subdomains, preload list) and cookies are sent only over HTTPS. `manage.py check --deploy` is
# then clean. Behind a TLS-terminating proxy, SECURE_BEHIND_PROXY=True trusts its X-Forwarded-Proto header (only
# when the proxy always sets it).
SECURE_HTTPS = envbool("SECURE_HTTPS", "False")
SECURE_SSL_REDIRECT = SECURE_HTTPS
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = SECURE_HTTPS
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 365 * 24 * 3600) if SECURE_HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HTTPS and envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", "True")
SECURE_HSTS_PRELOAD = SECURE_HTTPS and envbool("SECURE_HSTS_PRELOAD", "True")
if envbool("SECURE_BEHIND_PROXY", "False"):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Content-Security-Policy of every response (config.middleware.ContentSecurityPolicyMiddleware), always on. Scripts
# come from this site's files only (no inline script, no eval); styles may be inline: Plotly and htmx set them at
# run time. Chart images are data: URLs.
CONTENT_SECURITY_POLICY = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self' 'unsafe-inline'",
    "img-src": "'self' data: blob:",
    "font-src": "'self' data:",
    "connect-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'self'",
    "form-action": "'self'",
    "frame-ancestors": "'none'",
}

VAR_DIR = Path(os.getenv("VAR_DIR", BASE_DIR / "var"))
private_folder(VAR_DIR)  # the database, the broker's folder, work folders: no other user lists or reads them

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "axes",
    # The project's apps, bottom to top: each imports only those listed before it (README, "The house").
    "catalogue",
    "evaluator",
    "leaderboard",
    "inspector",
    "config.apps.ProjectConfig",  # the project's wiring (signal handlers), above every app
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "config.middleware.ContentSecurityPolicyMiddleware",
    "config.middleware.RequestBodyLimitMiddleware",  # before anything reads the body (CSRF reads the form)
    "config.middleware.QueryStringMiddleware",  # NUL in a query string: 400 (PostgreSQL text cannot hold it)
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "axes.middleware.AxesMiddleware",  # last: turns a locked-out login into a 429 page
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------------------------
# SQLite by default: WAL so the web process reads while the worker writes, IMMEDIATE transactions and a busy
# timeout so concurrent writers wait instead of failing with "database is locked".
DATABASES: dict[str, Any] = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.getenv("SQLITE_PATH", str(VAR_DIR / "db.sqlite3")),
        "OPTIONS": {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=20000;",
        },
    }
}
if database_url := os.getenv("DATABASE_URL"):
    DATABASES["default"] = dj_database_url.parse(database_url, conn_max_age=60, conn_health_checks=True)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Login lockout (django-axes): LOGIN_FAILURE_LIMIT wrong passwords for one username from one address lock that pair
# out for LOGIN_COOLOFF_MINUTES (HTTP 429, even with the right password); a successful login resets the count.
# Attempts are rows in the database, so every web process sees them.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
# LOGIN_ADDRESS_FAILURE_LIMIT wrong passwords from one address, whatever the usernames, lock the address out too
# (one password tried on many usernames); AXES_FAILURE_LIMIT picks the limit that applies to each attempt.
LOGIN_FAILURE_LIMIT = envint("LOGIN_FAILURE_LIMIT", 10)
LOGIN_ADDRESS_FAILURE_LIMIT = envint("LOGIN_ADDRESS_FAILURE_LIMIT", 30)
AXES_FAILURE_LIMIT = "leaderboard.api.throttles.login_failure_limit"
AXES_COOLOFF_TIME = timedelta(minutes=envint("LOGIN_COOLOFF_MINUTES", 30))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False
AXES_CLIENT_IP_CALLABLE = "leaderboard.api.throttles.client_ip"  # the throttles' address (NUM_PROXIES)
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"
# Self-service sign-up (/accounts/signup/) is open; with True, new accounts stay inactive until staff activate them.
SIGNUP_REQUIRES_APPROVAL = envbool("SIGNUP_REQUIRES_APPROVAL", "False")

# Compute budget per account and per LLM over a rolling 24 hours (evaluator.selectors.budget); staff raise it per
# account or LLM in the admin (Compute budgets). Enough for a full KernelBench run (250 problems x 4 samples).
BUDGET_KERNELS_PER_DAY = envint("BUDGET_KERNELS_PER_DAY", 1000)
BUDGET_GPU_SECONDS_PER_DAY = envint("BUDGET_GPU_SECONDS_PER_DAY", 50_000)
BUDGET_QUEUED_MAX = envint("BUDGET_QUEUED_MAX", 1000)

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # `collectstatic` fills it for production
# Serve app and package static files straight from their folders when collectstatic has not run (tests, make run).
WHITENOISE_USE_FINDERS = True

# --- Celery ---------------------------------------------------------------------------------------------------
CELERY_BROKER_URL = os.getenv("CELERY_BROKER_URL") or os.getenv("REDIS_URL") or "filesystem://"
if CELERY_BROKER_URL == "filesystem://":
    # Embedded broker: no server. Kombu's filesystem transport writes to data_folder_out and reads data_folder_in,
    # so web and worker processes point both at one folder; the folders must exist before either starts.
    CELERY_QUEUE_DIR = private_folder(Path(os.getenv("CELERY_QUEUE_DIR", VAR_DIR / "celery")))
    (CELERY_QUEUE_DIR / "processed").mkdir(parents=True, exist_ok=True)
    (CELERY_QUEUE_DIR / "control").mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(CELERY_QUEUE_DIR),
        "data_folder_out": str(CELERY_QUEUE_DIR),
        "processed_folder": str(CELERY_QUEUE_DIR / "processed"),
        "store_processed": False,
        # Exchange bindings (kombu's default is ./control, relative to whatever directory a process started in).
        "control_folder": str(CELERY_QUEUE_DIR / "control"),
    }
elif CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    # A worker reads its queues in the order it names them (-Q eval-h200,eval-h200-rerun,...): uploads first. Other
    # brokers go round robin; on every broker a re-run yields to waiting uploads (evaluator.services.reruns).
    CELERY_BROKER_TRANSPORT_OPTIONS = {"queue_order_strategy": "priority"}
CELERY_TASK_ALWAYS_EAGER = envbool("CELERY_TASK_ALWAYS_EAGER", "False")
CELERY_TASK_IGNORE_RESULT = True  # the Evaluation row is the truth; no result backend
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# The reaper requeues (or, after EVALUATOR_MAX_ATTEMPTS, fails) evaluations whose worker died mid-run. `make run`
# starts beat inside its worker; a multi-machine deployment runs exactly one `celery -A config beat`.
EVALUATOR_REAP_INTERVAL = envint("EVALUATOR_REAP_INTERVAL", 30)  # seconds between two reaper runs (beat)
CELERY_BEAT_SCHEDULE = {
    "reap-evaluations": {
        "task": "evaluator.reap_evaluations",
        "schedule": float(EVALUATOR_REAP_INTERVAL),
        # A worker with one slot takes it between two evaluations; a message that waited ten periods is stale.
        "options": {"queue": "default", "expires": 10.0 * EVALUATOR_REAP_INTERVAL},
    },
    # Reproducible verdicts (README "How a reader checks a verdict"): reveal due master seeds; re-evaluate champions
    # measured on an older software stack.
    "reveal-seeds": {"task": "evaluator.reveal_seeds", "schedule": 3600.0, "options": {"queue": "default"}},
    "rerun-champions": {
        "task": "evaluator.rerun_champions",
        "schedule": float(envint("RERUN_INTERVAL", 3600)),
        "options": {"queue": "default"},
    },
}
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")

# Hardware label this deployment evaluates on by default ("cpu" needs no GPU; "h200" for an H200 worker pool).
# Each hardware label has its own queue, "eval-<label>", so GPU workers only take work meant for their GPU.
EVALUATOR_DEFAULT_HARDWARE = os.getenv("EVALUATOR_DEFAULT_HARDWARE", "cpu")
# The labels this deployment has worker pools for (comma-separated, e.g. "cpu,h200"); uploads naming any other label
# are refused, since nothing would ever consume their queue. The default label is always one of them.
EVALUATOR_HARDWARE_LABELS = [
    label.strip().lower()
    for label in os.getenv("EVALUATOR_HARDWARE_LABELS", EVALUATOR_DEFAULT_HARDWARE).split(",")
    if label.strip()
]
EVALUATOR_HARNESS_TIMEOUT = envint("EVALUATOR_HARNESS_TIMEOUT", 900)  # seconds, per kernel, inside the task
EVALUATOR_MAX_ATTEMPTS = envint("EVALUATOR_MAX_ATTEMPTS", 3)
# Faults (README "Reliability"): a running evaluation refreshes its heartbeat every HEARTBEAT_INTERVAL seconds and
# the reaper requeues it once the heartbeat is HEARTBEAT_STALE old; a queued one whose message never reached the
# broker is sent after ENQUEUE_STALE seconds, and one whose message may have been lost is sent again after
# QUEUED_STALE seconds (duplicates are harmless: claims are compare-and-set).
EVALUATOR_HEARTBEAT_INTERVAL = envint("EVALUATOR_HEARTBEAT_INTERVAL", 10)
EVALUATOR_HEARTBEAT_STALE = envint("EVALUATOR_HEARTBEAT_STALE", 60)
EVALUATOR_ENQUEUE_STALE = envint("EVALUATOR_ENQUEUE_STALE", 60)
EVALUATOR_QUEUED_STALE = envint("EVALUATOR_QUEUED_STALE", 1800)
# A lost queue: the reaper re-sends queued rows sent longer ago than this when their broker queue is empty.
EVALUATOR_LOST_QUEUE_AFTER = envint("EVALUATOR_LOST_QUEUE_AFTER", 120)
EVALUATOR_WORK_DIR = Path(os.getenv("EVALUATOR_WORK_DIR", VAR_DIR / "work"))
EVALUATOR_COMPILE_CACHE_DIR = Path(os.getenv("EVALUATOR_COMPILE_CACHE_DIR", VAR_DIR / "compile-cache"))
EVALUATOR_PYTHON = os.getenv("EVALUATOR_PYTHON", "")  # interpreter for the harness; default: this one
# Evaluations on one GPU (a worker with -c > 1) share it for correctness and take turns for timing (gpu_lock.py).
EVALUATOR_GPU_LOCK_DIR = Path(os.getenv("EVALUATOR_GPU_LOCK_DIR", VAR_DIR / "gpu-locks"))
# Each worker process keeps the next evaluation's harness started (workers up, torch imported, CUDA context made)
# while the current one runs (runner.run_evaluation(prestart=True)). Off by default: it holds two idle processes
# per worker slot; on GPU machines it takes the per-evaluation start-up off the critical path.
EVALUATOR_PRESTART = envbool("EVALUATOR_PRESTART")
# Kernels run in Linux namespaces made by bubblewrap (evaluator/harness/sandbox/namespaces.py). Required unless DEBUG: a
# machine without it then refuses to evaluate (an infrastructure error) rather than silently isolate less.
EVALUATOR_REQUIRE_SANDBOX = envbool("EVALUATOR_REQUIRE_SANDBOX", str(not DEBUG))

# --- Reproducible verdicts ------------------------------------------------------------------------------------
# Each evaluation's secret seeds derive from one master seed, drawn when it is queued and whose digest is published
# then; the master is revealed once the evaluation is superseded or this many days old (manage.py reproduce).
SEEDS_REVEAL_AFTER_DAYS = envint("SEEDS_REVEAL_AFTER_DAYS", 30)
# Champions measured on an older torch/CUDA/driver/GPU are evaluated again on eval-<hardware>-rerun, within this many
# estimated harness seconds per hardware kind and rolling 24 hours (a kernel without a timing yet counts
# RERUN_DEFAULT_SECONDS).
RERUN_GPU_SECONDS_PER_DAY = envint("RERUN_GPU_SECONDS_PER_DAY", 3600)
RERUN_DEFAULT_SECONDS = envint("RERUN_DEFAULT_SECONDS", 120)
# A re-evaluation taken by a worker while an upload of its hardware waits goes back to its queue this many seconds.
RERUN_DEFER_SECONDS = envint("RERUN_DEFER_SECONDS", 30)
# Webhooks (one per account, evaluator.services.webhooks): seconds per call, retries with backoff, and whether a URL
# may point at a loopback, private or link-local address: off in every mode, DEBUG included (a webhook must not
# reach the site's own network); turn it on only to test webhooks against a receiver on this machine.
WEBHOOK_TIMEOUT = envint("WEBHOOK_TIMEOUT", 5)
WEBHOOK_MAX_RETRIES = envint("WEBHOOK_MAX_RETRIES", 5)
WEBHOOK_ALLOW_PRIVATE = envbool("WEBHOOK_ALLOW_PRIVATE", "False")

# --- Uploads --------------------------------------------------------------------------------------------------
BUNDLE_MAX_BYTES = envint("BUNDLE_MAX_BYTES", 20 * 1024 * 1024)
BUNDLE_MAX_FILES = envint("BUNDLE_MAX_FILES", 2000)
KERNEL_MAX_BYTES = envint("KERNEL_MAX_BYTES", 512 * 1024)
# CPU seconds the web process may spend reading one archive (leaderboard/bundles/archives.py): a bound on crafted
# archives whatever the interpreter's tarfile/zipfile (CVE-2024-6232 and the like).
BUNDLE_PARSE_SECONDS = envint("BUNDLE_PARSE_SECONDS", 30)
DATA_UPLOAD_MAX_MEMORY_SIZE = BUNDLE_MAX_BYTES + 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
# The problem set an upload (and a page) targets when it names none. Empty: the newest set with problems for the
# upload hardware, the CPU-sized demo on a CPU (leaderboard.selectors.problem_sets.problem_set_default).
PROBLEM_SET_DEFAULT = os.getenv("PROBLEM_SET_DEFAULT", "")

# --- LLM judges -----------------------------------------------------------------------------------------------
# A JSON list of {"name", "base_url", "model", "api_key_env"}: any OpenAI-compatible endpoint. Empty: no judge.
AUDIT_JUDGES_JSON = os.getenv("AUDIT_JUDGES", "[]")
AUDIT_JUDGE_TIMEOUT = envint("AUDIT_JUDGE_TIMEOUT", 120)

# --- REST API -------------------------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "leaderboard.authentication.HashedTokenAuthentication",  # `Authorization: Token <key>`, stored hashed
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    # JSON bodies are untrusted: depth-limited, finite numbers only (leaderboard/untrusted.py).
    "DEFAULT_PARSER_CLASSES": [
        "leaderboard.api.parsers.UntrustedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "leaderboard.api.pagination.BoundedLimitOffsetPagination",
    "PAGE_SIZE": 100,
    # Throttles and the login lockout key clients by address: X-Forwarded-For is read only through NUM_PROXIES
    # trusted reverse proxies, so a client cannot pick a fresh address per request (DRF's default trusts any).
    "NUM_PROXIES": envint("NUM_PROXIES", 0),
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_THROTTLE_CLASSES": [  # DRF's, counting in the shared "throttle" cache
        "leaderboard.api.throttles.AnonRateThrottle",
        "leaderboard.api.throttles.UserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": os.getenv("API_THROTTLE_ANON", "600/minute"),
        "user": os.getenv("API_THROTTLE_USER", "3000/minute"),
        "submissions": os.getenv("API_THROTTLE_SUBMISSIONS", "60/hour"),
        "signup": os.getenv("SIGNUP_THROTTLE", "5/hour"),  # accounts made per address (the sign-up page)
    },
}
SPECTACULAR_SETTINGS = {
    "TITLE": "KernelBench-Verified API",
    "DESCRIPTION": "Submit LLM-generated GPU kernels and read verified evaluation results.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",  # served by the app, so /api/docs/ works offline
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Several models have a "status" field with different choices; name their enums explicitly.
    "ENUM_NAME_OVERRIDES": {
        "SubmissionStatusEnum": "catalogue.models.Submission.Status",
        "EvaluationStatusEnum": "evaluator.models.Evaluation.Status",
    },
}

# Throttle counts (API and upload form) must be shared by every web process: the "throttle" cache is a database
# table (made by `migrate`, or `manage.py createcachetable`) unless CACHE_URL (or REDIS_URL) names a Redis server.
# The default cache holds the leaderboard's boards, which carry their own staleness checks.
CACHE_URL = os.getenv("CACHE_URL") or os.getenv("REDIS_URL") or ""
if CACHE_URL.startswith(("redis://", "rediss://", "unix://")):
    THROTTLE_CACHE = {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": CACHE_URL,
        "KEY_PREFIX": "kbv",
    }
elif CACHE_URL:
    raise ImproperlyConfigured("CACHE_URL must be a redis://, rediss:// or unix:// URL")
else:
    THROTTLE_CACHE = {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": "kbv_cache"}
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}, "throttle": THROTTLE_CACHE}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.getenv("LOG_LEVEL", "INFO")},
}
