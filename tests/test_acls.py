"""The ACL model, its store and the authorizer's decision (``server/security/``), without a server.

Kafka's semantics (``StandardAuthorizer``): DENY wins, implied DESCRIBE / DESCRIBE_CONFIGS,
literal / ``*`` / prefixed patterns, ``User:*`` and host ``*``, ``super.users``,
``allow.everyone.if.no.acl.found`` for a resource no ACL names (default true only for PLAINTEXT
on loopback); filters with ANY and MATCH; the store survives a reopen and refuses a damaged file
with one line naming it. A property test compares the decision with a plain reference written
from the rules over every stored binding.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.server.security.acls import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclError,
    AclOperation,
    AclStore,
    PatternType,
    PermissionType,
    ResourcePattern,
    ResourceType,
    parse_enum,
    validate_binding,
)
from groupcoord.server.security.authorizer import (
    Authorizer,
    default_allow_everyone,
    parse_super_users,
)

Op = AclOperation
RT = ResourceType
PT = PatternType
ALLOW = PermissionType.ALLOW
DENY = PermissionType.DENY
HOST = "10.0.0.1"


def acl(rtype: RT, name: str, principal: str, op: Op, perm: PermissionType = ALLOW,
        pattern: PT = PT.LITERAL, host: str = "*") -> AclBinding:
    return AclBinding(ResourcePattern(rtype, name, pattern),
                      AccessControlEntry(principal, host, op, perm))


def authz(*bindings: AclBinding, allow_everyone: bool = False,
          super_users: frozenset[str] = frozenset()) -> Authorizer:
    store = AclStore()
    store.add(bindings)
    return Authorizer(store, super_users, allow_everyone)


def ok(a: Authorizer, principal: str, op: Op, rtype: RT, name: str, host: str = HOST) -> bool:
    return a.authorize(principal, host, op, rtype, name)


def test_allow_then_deny_wins_over_allow() -> None:
    a = authz(acl(RT.GROUP, "g", "User:alice", Op.READ))
    assert ok(a, "User:alice", Op.READ, RT.GROUP, "g")
    assert not ok(a, "User:bob", Op.READ, RT.GROUP, "g")  # ACLs exist: nobody else
    assert not ok(a, "User:alice", Op.DELETE, RT.GROUP, "g")
    a.store.add([acl(RT.GROUP, "*", "User:*", Op.ALL, DENY)])
    assert not ok(a, "User:alice", Op.READ, RT.GROUP, "g")
    assert not ok(a, "User:alice", Op.READ, RT.GROUP, "other")


def test_implied_operations_allow_but_deny_is_exact() -> None:
    a = authz(acl(RT.TOPIC, "t", "User:alice", Op.WRITE),
              acl(RT.TOPIC, "t", "User:alice", Op.ALTER_CONFIGS))
    assert ok(a, "User:alice", Op.DESCRIBE, RT.TOPIC, "t")  # WRITE implies DESCRIBE
    assert ok(a, "User:alice", Op.DESCRIBE_CONFIGS, RT.TOPIC, "t")
    assert not ok(a, "User:alice", Op.READ, RT.TOPIC, "t")
    for op in (Op.READ, Op.DELETE, Op.ALTER):
        assert ok(authz(acl(RT.GROUP, "g", "User:x", op)), "User:x", Op.DESCRIBE, RT.GROUP, "g")
    assert not ok(authz(acl(RT.GROUP, "g", "User:x", Op.CREATE)), "User:x", Op.DESCRIBE,
                  RT.GROUP, "g")
    # DENY READ leaves DESCRIBE (allowed by ALL) alone; DENY ALL denies everything.
    d = authz(acl(RT.GROUP, "g", "User:x", Op.ALL), acl(RT.GROUP, "g", "User:x", Op.READ, DENY))
    assert ok(d, "User:x", Op.DESCRIBE, RT.GROUP, "g") and not ok(d, "User:x", Op.READ, RT.GROUP, "g")


def test_prefixed_and_wildcard_patterns_principals_and_hosts() -> None:
    a = authz(acl(RT.GROUP, "team-", "User:alice", Op.READ, pattern=PT.PREFIXED),
              acl(RT.TOPIC, "*", "User:*", Op.DESCRIBE),
              acl(RT.TOPIC, "secret", "User:alice", Op.READ, host="10.0.0.9"))
    assert ok(a, "User:alice", Op.READ, RT.GROUP, "team-a")
    assert ok(a, "User:alice", Op.READ, RT.GROUP, "team-")
    assert not ok(a, "User:alice", Op.READ, RT.GROUP, "team")
    assert not ok(a, "User:alice", Op.READ, RT.GROUP, "other-team-a")
    assert ok(a, "User:anyone", Op.DESCRIBE, RT.TOPIC, "whatever")
    assert ok(a, "User:alice", Op.READ, RT.TOPIC, "secret", host="10.0.0.9")
    assert not ok(a, "User:alice", Op.READ, RT.TOPIC, "secret", host="10.0.0.8")
    # A "*" literal name only means every resource in a stored pattern, not a prefix "*".
    assert not ok(authz(acl(RT.GROUP, "*", "User:a", Op.READ, pattern=PT.PREFIXED)),
                  "User:a", Op.READ, RT.GROUP, "g")


def test_no_acl_found_and_super_users() -> None:
    open_ = authz(acl(RT.GROUP, "g", "User:alice", Op.READ), allow_everyone=True)
    assert ok(open_, "User:bob", Op.READ, RT.GROUP, "other")  # nothing names "other"
    assert not ok(open_, "User:bob", Op.READ, RT.GROUP, "g")  # "g" has ACLs
    closed = authz(acl(RT.GROUP, "g", "User:bob", Op.ALL, DENY),
                   super_users=parse_super_users(" User:admin ; User:ops;"))
    assert closed.super_users == {"User:admin", "User:ops"}
    assert not ok(closed, "User:bob", Op.READ, RT.GROUP, "other")
    assert ok(closed, "User:admin", Op.READ, RT.GROUP, "g")  # DENY does not bind super users
    assert ok(closed, "User:ops", Op.CLUSTER_ACTION, RT.CLUSTER, "kafka-cluster")


def test_allow_everyone_default_follows_the_listeners() -> None:
    assert default_allow_everyone([("PLAINTEXT", "127.0.0.1")])
    assert default_allow_everyone([("PLAINTEXT", "::1"), ("PLAINTEXT", "localhost")])
    assert not default_allow_everyone([("PLAINTEXT", "0.0.0.0")])
    assert not default_allow_everyone([("PLAINTEXT", "10.1.2.3")])
    assert not default_allow_everyone([("SASL_PLAINTEXT", "127.0.0.1")])
    assert not default_allow_everyone([("PLAINTEXT", "127.0.0.1"), ("SSL", "127.0.0.1")])
    assert not default_allow_everyone([])
    store = AclStore()
    assert Authorizer.from_properties(store, {}, [("PLAINTEXT", "127.0.0.1")]).allow_everyone_if_no_acl
    assert not Authorizer.from_properties(store, {}, [("PLAINTEXT", "0.0.0.0")]).allow_everyone_if_no_acl
    forced = Authorizer.from_properties(store, {"allow.everyone.if.no.acl.found": "TRUE"},
                                        [("PLAINTEXT", "0.0.0.0")])
    assert forced.allow_everyone_if_no_acl
    with pytest.raises(ValueError, match=r"allow\.everyone\.if\.no\.acl\.found must be true or false"):
        Authorizer.from_properties(store, {"allow.everyone.if.no.acl.found": "yes"}, [])


def test_authorize_any_as_init_producer_id_uses_it() -> None:
    a = authz(acl(RT.TOPIC, "t", "User:p", Op.WRITE))
    assert a.authorize_any("User:p", HOST, Op.WRITE, RT.TOPIC)
    assert not a.authorize_any("User:q", HOST, Op.WRITE, RT.TOPIC)
    a.store.add([acl(RT.TOPIC, "t", "User:p", Op.WRITE, DENY, PT.PREFIXED)])
    assert not a.authorize_any("User:p", HOST, Op.WRITE, RT.TOPIC)
    b = authz(acl(RT.TOPIC, "a-", "User:p", Op.ALL, pattern=PT.PREFIXED),
              acl(RT.TOPIC, "*", "User:p", Op.WRITE, DENY))
    assert not b.authorize_any("User:p", HOST, Op.WRITE, RT.TOPIC)
    assert authz(allow_everyone=True).authorize_any("User:p", HOST, Op.WRITE, RT.TOPIC)


def test_authorized_operations_bits() -> None:
    a = authz(acl(RT.GROUP, "g", "User:x", Op.READ))
    bits = a.authorized_operations("User:x", HOST, RT.GROUP, "g")
    assert bits == (1 << Op.READ) | (1 << Op.DESCRIBE)


def test_parse_enum_and_validation_errors() -> None:
    assert parse_enum(AclOperation, "DescribeConfigs") == Op.DESCRIBE_CONFIGS
    assert parse_enum(AclOperation, "idempotent-write") == Op.IDEMPOTENT_WRITE
    assert parse_enum(PatternType, "prefixed") == PT.PREFIXED
    with pytest.raises(AclError, match="unknown AclOperation 'Reed'; expected one of"):
        parse_enum(AclOperation, "Reed")
    good = acl(RT.GROUP, "g", "User:a", Op.READ)
    validate_binding(good)
    bad = {
        "resource type ANY": acl(RT.ANY, "g", "User:a", Op.READ),
        "pattern type MATCH": acl(RT.GROUP, "g", "User:a", Op.READ, pattern=PT.MATCH),
        "operation ANY": acl(RT.GROUP, "g", "User:a", Op.ANY),
        "permission type ANY": acl(RT.GROUP, "g", "User:a", Op.READ, PermissionType.ANY),
        "Resource name should not be empty": acl(RT.GROUP, "", "User:a", Op.READ),
        "only valid name for the CLUSTER": acl(RT.CLUSTER, "c", "User:a", Op.ALTER),
        "Could not parse principal": acl(RT.GROUP, "g", "alice", Op.READ),
        "Host should not be empty": acl(RT.GROUP, "g", "User:a", Op.READ, host=""),
    }
    for message, b in bad.items():
        with pytest.raises(AclError, match=message):
            validate_binding(b)


def test_filters_any_and_match() -> None:
    lit = acl(RT.TOPIC, "orders", "User:a", Op.READ)
    star = acl(RT.TOPIC, "*", "User:b", Op.WRITE, DENY)
    pre = acl(RT.TOPIC, "ord", "User:a", Op.READ, pattern=PT.PREFIXED)
    other = acl(RT.GROUP, "orders", "User:a", Op.READ)
    every = [lit, star, pre, other]
    match = AclBindingFilter(RT.TOPIC, "orders", PT.MATCH)
    assert [b for b in every if match.matches(b)] == [lit, star, pre]
    assert [b for b in every if AclBindingFilter().matches(b)] == every
    assert [b for b in every if AclBindingFilter(name="orders").matches(b)] == [lit, other]
    assert [b for b in every if AclBindingFilter(pattern_type=PT.PREFIXED).matches(b)] == [pre]
    assert [b for b in every if AclBindingFilter(principal="User:b", permission=DENY)
            .matches(b)] == [star]
    with pytest.raises(AclError, match="UNKNOWN"):
        AclBindingFilter(operation=Op.UNKNOWN).validate()


def test_store_survives_reopen_and_names_a_damaged_file(tmp_path: Path) -> None:
    store = AclStore.in_dir(tmp_path)
    a, b = acl(RT.GROUP, "g", "User:a", Op.READ), acl(RT.TOPIC, "t-", "User:a", Op.ALL,
                                                    pattern=PT.PREFIXED)
    store.add([a, b, a])
    assert len(store) == 2
    again = AclStore.in_dir(tmp_path)
    assert set(again) == {a, b}
    assert again.remove([AclBindingFilter(resource_type=RT.TOPIC)]) == [[b]]
    assert set(AclStore.in_dir(tmp_path)) == {a}
    assert not list(tmp_path.glob("*.tmp"))
    (tmp_path / "acls.json").write_text('{"acls": [{"resource_type": "NOPE"}]}')
    with pytest.raises(ValueError, match=re.escape(f"cannot read ACLs from {tmp_path / 'acls.json'}")):
        AclStore.in_dir(tmp_path)
    (tmp_path / "acls.json").write_text("{not json")
    with pytest.raises(ValueError, match="cannot read ACLs from"):
        AclStore.in_dir(tmp_path)


# ------------------------------------------------------------------ property: vs a reference

NAMES = ["a", "ab", "abc", "b", "*"]
PRINCIPALS = ["User:a", "User:b", "User:*"]
HOSTS = ["1.1.1.1", "2.2.2.2", "*"]
OPS = [Op.ALL, Op.READ, Op.WRITE, Op.DELETE, Op.ALTER, Op.DESCRIBE, Op.DESCRIBE_CONFIGS,
       Op.ALTER_CONFIGS, Op.CREATE]

bindings = st.builds(
    lambda rt, name, pt, pr, host, op, perm: acl(rt, name, pr, op, perm, pt, host),
    st.sampled_from([RT.TOPIC, RT.GROUP]), st.sampled_from(NAMES),
    st.sampled_from([PT.LITERAL, PT.PREFIXED]), st.sampled_from(PRINCIPALS),
    st.sampled_from(HOSTS), st.sampled_from(OPS), st.sampled_from([ALLOW, DENY]))


def reference(acls: list[AclBinding], supers: set[str], allow_everyone: bool, principal: str,
              host: str, op: Op, rtype: RT, name: str) -> bool:
    """Kafka's rules, spelled out over every binding (no index, no shortcuts)."""
    if principal in supers:
        return True

    def on_resource(b: AclBinding) -> bool:
        p = b.pattern
        if p.resource_type != rtype:
            return False
        if p.pattern_type == PT.LITERAL:
            return p.name in (name, "*")
        return name.startswith(p.name)

    relevant = [b for b in acls if on_resource(b)]
    if not relevant:
        return allow_everyone
    mine = [b.entry for b in relevant if b.entry.principal in (principal, "User:*")
            and b.entry.host in (host, "*")]
    if any(e.permission == DENY and e.operation in (op, Op.ALL) for e in mine):
        return False
    implied = {Op.DESCRIBE: {Op.READ, Op.WRITE, Op.DELETE, Op.ALTER},
               Op.DESCRIBE_CONFIGS: {Op.ALTER_CONFIGS}}.get(op, set())
    return any(e.permission == ALLOW and e.operation in {op, Op.ALL} | implied for e in mine)


@settings(max_examples=300, deadline=None)
@given(st.lists(bindings, max_size=8), st.sampled_from(["User:a", "User:b", "User:c"]),
       st.sampled_from(["1.1.1.1", "2.2.2.2"]), st.sampled_from(OPS[1:]),
       st.sampled_from([RT.TOPIC, RT.GROUP]), st.sampled_from(["a", "ab", "abc", "b", "c", "*"]),
       st.booleans(), st.sets(st.sampled_from(["User:a", "User:c"]), max_size=1))
def test_decision_matches_the_reference(acls: list[AclBinding], principal: str, host: str, op: Op,
                                        rtype: RT, name: str, allow_everyone: bool,
                                        supers: set[str]) -> None:
    a = authz(*acls, allow_everyone=allow_everyone, super_users=frozenset(supers))
    assert a.authorize(principal, host, op, rtype, name) == reference(
        acls, supers, allow_everyone, principal, host, op, rtype, name)


# ------------------------------------------------------------------ remembered decisions


def test_a_remembered_decision_follows_every_change_of_the_acls() -> None:
    """Decisions are cached per ACL store generation: an ACL added or removed, and
    allow.everyone.if.no.acl.found changed, decide the very next question."""
    a = authz(acl(RT.TOPIC, "other", "User:x", Op.READ))  # some ACL: the cached path

    def ask() -> bool:
        return ok(a, "User:alice", Op.READ, RT.GROUP, "g")

    assert not ask() and not ask()  # no ACL on g, allow.everyone false
    a.store.add([acl(RT.GROUP, "g", "User:alice", Op.READ)])
    assert ask() and ask()
    a.store.add([acl(RT.GROUP, "g", "User:alice", Op.READ, DENY, host=HOST)])
    assert not ask()
    a.store.remove([AclBindingFilter(permission=DENY)])
    assert ask()
    a.store.remove([AclBindingFilter(resource_type=RT.GROUP)])
    assert not ask()
    a.allow_everyone_if_no_acl = True
    assert ask()
    a.store = AclStore()  # another store (no ACLs at all)
    a.allow_everyone_if_no_acl = False
    assert not ask()


def test_the_decision_cache_is_bounded() -> None:
    a = authz(acl(RT.GROUP, "g-", "User:alice", Op.READ, pattern=PT.PREFIXED))
    a.CACHE_SIZE = 50  # type: ignore[misc]
    for i in range(500):
        assert ok(a, "User:alice", Op.READ, RT.GROUP, f"g-{i}")
        assert not ok(a, "User:alice", Op.READ, RT.GROUP, f"h-{i}")
        assert len(a._cache) <= 50


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.booleans(), bindings), min_size=1, max_size=12),
       st.sampled_from(["User:a", "User:b"]), st.sampled_from(OPS[1:]),
       st.sampled_from(["a", "ab", "b", "*"]))
def test_cached_decisions_match_the_reference_after_each_change(
        changes: list[tuple[bool, AclBinding]], principal: str, op: Op, name: str) -> None:
    """ACLs added and removed one at a time; after each change every question is answered
    as the reference answers it over the bindings then stored (asked twice: the second
    answer comes from the cache)."""
    a = authz()
    for add, b in changes:
        if add:
            a.store.add([b])
        else:
            a.store.remove([AclBindingFilter(b.pattern.resource_type, b.pattern.name,
                                             b.pattern.pattern_type, b.entry.principal,
                                             b.entry.host, b.entry.operation,
                                             b.entry.permission)])
        stored = list(a.store)
        for rtype in (RT.TOPIC, RT.GROUP):
            for host in ("1.1.1.1", "2.2.2.2"):
                want = reference(stored, set(), False, principal, host, op, rtype, name)
                assert a.authorize(principal, host, op, rtype, name) == want
                assert a.authorize(principal, host, op, rtype, name) == want


@pytest.mark.parametrize("allow_everyone", [True, False])
def test_denied_names_agree_with_authorize_name_by_name(allow_everyone: bool) -> None:
    """``Authorizer.denied`` (a heartbeat's DESCRIBE check of its whole subscription) refuses
    exactly the names ``authorize`` refuses one by one: with ACLs, without any (one decision
    for all), and for a super user."""
    names = ["a", "b", "secret", "c", "secret-2"]
    with_acls = authz(acl(RT.TOPIC, "secret", "User:*", Op.DESCRIBE, DENY, PT.PREFIXED),
                      acl(RT.TOPIC, "a", "User:alice", Op.DESCRIBE),
                      allow_everyone=allow_everyone, super_users=frozenset({"User:root"}))
    without = authz(allow_everyone=allow_everyone, super_users=frozenset({"User:root"}))
    for a in (with_acls, without):
        for principal in ("User:alice", "User:bob", "User:root"):
            expected = [n for n in names if not ok(a, principal, Op.DESCRIBE, RT.TOPIC, n)]
            assert a.denied(principal, HOST, Op.DESCRIBE, RT.TOPIC, names) == expected
    assert with_acls.denied("User:alice", HOST, Op.DESCRIBE, RT.TOPIC, names) == \
        (["secret", "secret-2"] if allow_everyone else ["b", "secret", "c", "secret-2"])
    assert without.denied("User:bob", HOST, Op.DESCRIBE, RT.TOPIC, names) == \
        ([] if allow_everyone else names)
