"""SCRAM credentials (RFC 5802, RFC 7677), stored salted, never as passwords.

Each user has, per mechanism (SCRAM-SHA-256, SCRAM-SHA-512), the salt, the iteration count,
StoredKey = H(HMAC(SaltedPassword, "Client Key")) and ServerKey = HMAC(SaltedPassword,
"Server Key"), where SaltedPassword = PBKDF2-HMAC(password, salt, iterations): what Kafka keeps
(``ScramCredential``) and what an AlterUserScramCredentials upsertion carries (the client
sends the salted password, the broker derives the two keys).

The derivations are ``scramp``'s (``ScramMechanism.make_auth_info``); from a salted password
(AlterUserScramCredentials) they are two HMACs and a hash, done here with ``hmac`` / ``hashlib``
(scramp has no public function taking a salted password).

PLAIN is checked against the same material, as a server that stores only SCRAM material would:
the password given is salted with the stored salt and iterations and its StoredKey compared (in
constant time) with the stored one, with the user's SCRAM-SHA-512 credential if it has one, else
SCRAM-SHA-256. So ``groupcoord users add`` makes a user for PLAIN too (Kafka's own PLAIN reads
plain passwords from its JAAS file, which this server does not have).

Storage (:class:`CredentialStore`): ``scram-credentials.json`` in the data directory, mode 0600,
replaced atomically (written to a temporary file, fsynced, renamed, directory fsynced) under an
exclusive ``flock`` of ``scram-credentials.lock``, so that ``groupcoord users add`` and a
running server (AlterUserScramCredentials) do not lose each other's changes; the server reads the
file again when it changed on disk (a user added offline is known at once). With
``persist=False`` (``--storage memory``) the file, if there is one, is read once at start and
nothing is written: changes (AlterUserScramCredentials) live in memory until the server stops.

Limits as Kafka's: iterations 4096..16384 (``ScramMechanism.minIterations`` /
``maxIterations``); a salt of at least 12 bytes (scramp's minimum; Kafka's clients generate
longer ones; a shorter salt is refused with UNACCEPTABLE_CREDENTIAL rather than stored unusable).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import secrets
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "MECHANISMS",
    "CredentialError",
    "CredentialStore",
    "ScramCredential",
    "credential_from_password",
    "credential_from_salted_password",
]

#: SCRAM mechanism name -> (hashlib name, Kafka's ScramMechanism type id on the wire).
MECHANISMS: dict[str, tuple[str, int]] = {
    "SCRAM-SHA-256": ("sha256", 1),
    "SCRAM-SHA-512": ("sha512", 2),
}
MECHANISM_BY_TYPE = {t: name for name, (_, t) in MECHANISMS.items()}
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
DEFAULT_ITERATIONS = 4096
MIN_SALT_BYTES = 12
FILE_NAME = "scram-credentials.json"
LOCK_NAME = "scram-credentials.lock"


class CredentialError(ValueError):
    """A credential that cannot be stored (one line, naming what is wrong)."""


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes

    def to_json(self) -> dict[str, Any]:
        b64 = base64.b64encode
        return {"salt": b64(self.salt).decode(), "iterations": self.iterations,
                "stored_key": b64(self.stored_key).decode(),
                "server_key": b64(self.server_key).decode()}

    @staticmethod
    def from_json(d: dict[str, Any]) -> ScramCredential:
        b64 = base64.b64decode
        return ScramCredential(b64(d["salt"]), int(d["iterations"]), b64(d["stored_key"]),
                               b64(d["server_key"]))


def check_mechanism(mechanism: str) -> str:
    m = mechanism.upper()
    if m not in MECHANISMS:
        raise CredentialError(f"unknown SCRAM mechanism {mechanism!r} (known: "
                              f"{', '.join(MECHANISMS)})")
    return m


def check_iterations(iterations: int) -> None:
    if iterations < MIN_ITERATIONS:
        raise CredentialError(f"too few iterations: {iterations} (at least {MIN_ITERATIONS})")
    if iterations > MAX_ITERATIONS:
        raise CredentialError(f"too many iterations: {iterations} (at most {MAX_ITERATIONS})")


def credential_from_salted_password(mechanism: str, salt: bytes, salted_password: bytes,
                                    iterations: int) -> ScramCredential:
    """StoredKey and ServerKey from SaltedPassword (RFC 5802 section 3)."""
    hname = MECHANISMS[check_mechanism(mechanism)][0]
    check_iterations(iterations)
    if len(salt) < MIN_SALT_BYTES:
        raise CredentialError(f"salt too short: {len(salt)} bytes (at least {MIN_SALT_BYTES})")
    client_key = hmac.new(salted_password, b"Client Key", hname).digest()
    stored_key = hashlib.new(hname, client_key).digest()
    server_key = hmac.new(salted_password, b"Server Key", hname).digest()
    return ScramCredential(salt, iterations, stored_key, server_key)


def credential_from_password(mechanism: str, password: str,
                             iterations: int = DEFAULT_ITERATIONS,
                             salt: bytes | None = None) -> ScramCredential:
    """A new credential: a random 32-byte salt unless given; scramp derives the keys."""
    import scramp

    m = check_mechanism(mechanism)
    check_iterations(iterations)
    if not password:
        raise CredentialError("the password must not be empty")
    try:
        s, stored, server, i = scramp.ScramMechanism(m).make_auth_info(
            password, iteration_count=iterations, salt=salt or secrets.token_bytes(32))
    except scramp.ScramException as e:
        raise CredentialError(f"cannot make a {m} credential: {e}") from None
    return ScramCredential(s, i, stored, server)


def salted_password(mechanism: str, password: bytes, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(MECHANISMS[mechanism][0], password, salt, iterations)


def plain_matches(mechanism: str, cred: ScramCredential, password: bytes) -> bool:
    """Whether ``password`` is the one ``cred`` was made from (PLAIN against SCRAM material)."""
    hname = MECHANISMS[mechanism][0]
    sp = salted_password(mechanism, password, cred.salt, cred.iterations)
    client_key = hmac.new(sp, b"Client Key", hname).digest()
    return hmac.compare_digest(hashlib.new(hname, client_key).digest(), cred.stored_key)


Users = dict[str, dict[str, ScramCredential]]


class CredentialStore:
    """Users' SCRAM credentials, durable in ``data_dir`` (module doc) or kept in memory."""

    def __init__(self, data_dir: Path | str | None, persist: bool = True) -> None:
        self.persist = persist and data_dir is not None
        self.path = Path(data_dir) / FILE_NAME if data_dir is not None else None
        self._users: Users = {}
        self._stamp: tuple[int, int, int] | None = None
        if self.path is not None:  # in memory too: the users already on disk, read once
            self._read()

    def _read(self) -> None:
        assert self.path is not None
        stamp = self._file_stamp()
        if stamp is None:
            self._users, self._stamp = {}, None
            return
        try:
            raw = json.loads(self.path.read_text())
            users = {name: {m: ScramCredential.from_json(c) for m, c in mechs.items()}
                     for name, mechs in raw["users"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise CredentialError(f"{self.path}: cannot read the SCRAM credentials: "
                                  f"{type(e).__name__}: {e}") from None
        self._users, self._stamp = users, stamp

    # ------------------------------------------------------------------ disk

    def _file_stamp(self) -> tuple[int, int, int] | None:
        assert self.path is not None
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None
        return st.st_ino, st.st_mtime_ns, st.st_size

    def _reload(self) -> None:
        """Read the file if it changed since we last read or wrote it."""
        if not self.persist or self._file_stamp() == self._stamp:
            return
        self._read()

    def _write(self) -> None:
        assert self.path is not None
        data = {"version": 1, "users": {name: {m: c.to_json() for m, c in sorted(mechs.items())}
                                        for name, mechs in sorted(self._users.items())}}
        fd, tmp = tempfile.mkstemp(prefix=FILE_NAME + ".", suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(data, f, indent=1)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        dfd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
        self._stamp = self._file_stamp()

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Read-modify-write under the store's lock; writes the file when the block succeeds."""
        if not self.persist:
            yield
            return
        assert self.path is not None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.parent / LOCK_NAME, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                self._stamp = None  # under the lock: always read what is on disk
                self._reload()
                yield
                self._write()
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    # ------------------------------------------------------------------ reads

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        self._reload()
        return self._users.get(user, {}).get(mechanism)

    def users(self) -> dict[str, dict[str, int]]:
        """user -> mechanism -> iterations (what DescribeUserScramCredentials tells)."""
        self._reload()
        return {u: {m: c.iterations for m, c in sorted(ms.items())}
                for u, ms in sorted(self._users.items())}

    def check_plain(self, user: str, password: bytes) -> bool:
        """Whether ``password`` is ``user``'s. An unknown user costs the same PBKDF2 work as a
        known one (a quick refusal would tell that the user does not exist)."""
        self._reload()
        mechs = self._users.get(user, {})
        for m in ("SCRAM-SHA-512", "SCRAM-SHA-256"):
            if m in mechs:
                return plain_matches(m, mechs[m], password)
        salted_password("SCRAM-SHA-512", password, b"\0" * 32, DEFAULT_ITERATIONS)
        return False

    # ------------------------------------------------------------------ changes

    def apply(self, upserts: list[tuple[str, str, ScramCredential]],
              deletes: list[tuple[str, str]]) -> None:
        """Upsert (user, mechanism, credential) and delete (user, mechanism) in one write.
        Deleting a credential that does not exist raises CredentialError, changing nothing."""
        with self._locked():
            for user, m in deletes:
                if m not in self._users.get(user, {}):
                    raise CredentialError(f"user {user!r} has no {m} credential")
            for user, m in deletes:
                del self._users[user][m]
                if not self._users[user]:
                    del self._users[user]
            for user, m, cred in upserts:
                self._users.setdefault(user, {})[m] = cred

    def add(self, user: str, mechanism: str, password: str,
            iterations: int = DEFAULT_ITERATIONS) -> None:
        if not user:
            raise CredentialError("the user name must not be empty")
        m = check_mechanism(mechanism)
        self.apply([(user, m, credential_from_password(m, password, iterations))], [])

    def remove(self, user: str, mechanisms: list[str] | None = None) -> list[str]:
        """Remove ``user``'s credentials (all, or these mechanisms); the ones removed."""
        self._reload()
        have = sorted(self._users.get(user, {}))
        if not have:
            raise CredentialError(f"no user {user!r}")
        which = have if not mechanisms else [check_mechanism(m) for m in mechanisms]
        self.apply([], [(user, m) for m in which])
        return which
