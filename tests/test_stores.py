"""The stores an end-to-end test runs on, shared by tests/renderers_test.py and tests/web_state_test.py:
SQLite always, and PostgreSQL when a test cluster is there (BROWSERD_TEST_DATABASE_URL, which
scripts/with-postgres.sh sets; `make test` requires it through BROWSERD_REQUIRE_POSTGRES=1)."""
import os
import subprocess
import tempfile
import time
import urllib.parse


def postgres_database(prefix):
    """A database of its own on the test cluster, and a cluster secret file: (browserd's arguments,
    drop) — or None without a cluster."""
    admin = os.environ.get("BROWSERD_TEST_DATABASE_URL")
    if not admin:
        return None
    name = "%s_%d_%d" % (prefix, os.getpid(), int(time.time() * 1000) % 10**9)

    def psql(sql):
        subprocess.run(["psql", admin, "-q", "-v", "ON_ERROR_STOP=1", "-c", sql], check=True, stdout=subprocess.DEVNULL)

    psql("CREATE DATABASE %s" % name)
    parts = urllib.parse.urlsplit(admin)
    secret = tempfile.NamedTemporaryFile("w", prefix="browserd-secret-", delete=False)
    secret.write("%s-test-cluster-secret-%d\n" % (prefix, os.getpid()))
    secret.close()

    def drop():
        os.unlink(secret.name)
        try:
            psql("DROP DATABASE IF EXISTS %s WITH (FORCE)" % name)
        except subprocess.CalledProcessError:
            pass

    return ["--database-url", urllib.parse.urlunsplit(parts._replace(path="/" + name)), "--cluster-secret-file", secret.name], drop


def stores(prefix):
    """[(label, browserd's store arguments or None for its own SQLite data directory, drop)]."""
    found = [("SQLite", None, lambda: None)]
    postgres = postgres_database(prefix)
    if postgres:
        found.append(("PostgreSQL", postgres[0], postgres[1]))
    elif os.environ.get("BROWSERD_REQUIRE_POSTGRES") == "1":
        raise SystemExit("BROWSERD_TEST_DATABASE_URL is not set: run under scripts/with-postgres.sh (make test does)")
    return found
