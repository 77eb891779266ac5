"""τ²'s derived rules read who authenticates from the tools' metadata, not their names."""

from __future__ import annotations

from castbench_tau2.domain import Tau2Domain

IDENTITY_LOOKUPS = {
    "tau2-retail": {"find_user_id_by_email", "find_user_id_by_name_zip"},
    "tau2-airline": set(),  # the user gives their id
}


def test_each_pack_authenticates_by_the_tools_marked_so(pack: Tau2Domain) -> None:
    assert pack.rules.auth_tools == IDENTITY_LOOKUPS[pack.name]
    assert pack.rules.auth_tools == {tool.name for tool in pack.toolkit if tool.authenticates}
