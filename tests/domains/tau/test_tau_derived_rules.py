"""The τ packs' derived rules read who authenticates from the tools' metadata, not their names:
a renamed identity look-up still authenticates, a tool merely named `find_*` does not."""

from __future__ import annotations

import dataclasses

from castbench._domain.derived_rules import DerivedRules
from castbench.domain import Toolkit
from castbench_tau.domain import TauDomain

IDENTITY_LOOKUPS = {
    "tau-retail": {"find_user_id_by_email", "find_user_id_by_name_zip"},
    "tau-airline": set(),  # the user gives their id
    "tau-telecom": {"find_customer_by_email", "find_customer_by_phone"},
    "tau-telehealth": {"find_patient_by_email", "find_patient_by_name_dob"},
}


def test_each_pack_authenticates_by_its_identity_lookups(pack: TauDomain) -> None:
    assert pack.rules.auth_tools == IDENTITY_LOOKUPS[pack.name]
    assert pack.rules.auth_tools == {tool.name for tool in pack.toolkit if tool.authenticates}


def test_renamed_identity_lookups_still_authenticate(packs: dict[str, TauDomain]) -> None:
    retail = packs["tau-retail"]
    renames = {"find_user_id_by_email": "lookup_user", "get_user_details": "find_user_details"}
    toolkit = Toolkit(
        dataclasses.replace(tool, name=renames.get(tool.name, tool.name)) for tool in retail.toolkit
    )
    rules = DerivedRules(toolkit, retail.pristine)
    assert rules.auth_tools == {"lookup_user", "find_user_id_by_name_zip"}
    assert "find_user_details" not in rules.public_tools  # still reads a customer's record
