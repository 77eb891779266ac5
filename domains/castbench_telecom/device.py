"""The customer's phone: what they see on it and the settings they can change themselves.

These tools are the *user's* (`Domain.user_toolkit`): the agent cannot touch the phone, it can
only tell the customer what to do. Each tool takes the phone's own number, leaves the phone in
a definite state whatever it was before (so doing a step twice changes nothing), and answers
with what the status screen shows afterwards. What the phone shows depends on the back end
too: a suspended line has no service, and abroad a line needs roaming enabled by the carrier.
"""

from __future__ import annotations

from typing import Any

from castbench.domain import Database, read_tool, write_tool
from castbench_telecom.schema import Device, Line, Plan, gigabytes, phone_key

__all__ = ["USER_TOOLS", "phone_status"]

CORRECT_APN = "internet"


def _signal(device: Device, line: Line) -> str:
    if device.airplane_mode:
        return "airplane mode"
    if device.sim != "active":
        return "no SIM"
    if line.status != "active":
        return "no service"
    if device.location != "home":
        return "roaming" if line.roaming_enabled else "no service"
    return "connected"


def _allowance(db: Database, line: Line) -> float:
    return gigabytes(db.get(Plan, line.plan_id).data_gb + line.data_refuel_gb)


def _data(db: Database, device: Device, line: Line, signal: str) -> str:
    if signal not in ("connected", "roaming"):
        return "not connected"
    working = (
        device.mobile_data
        and (signal == "connected" or device.data_roaming)
        and device.apn == CORRECT_APN
        and not device.restart_pending
        and line.data_used_gb < _allowance(db, line)
    )
    return "connected" if working else "not connected"


def phone_status(db: Database, phone_number: str) -> dict[str, Any]:
    """The phone's status screen: signal, data connection, settings, and the carrier's messages."""
    device = db.get(Device, phone_key(phone_number))
    line = db.get(Line, device.phone_number)
    signal = _signal(device, line)
    messages = []
    if line.data_used_gb >= _allowance(db, line):
        messages.append(f"Carrier: you have used all {_allowance(db, line):g} GB of data for this month.")
    if device.restart_pending:
        messages.append("Restart your phone for the new network settings to take effect.")
    return {
        "phone_number": device.phone_number,
        "model": device.model,
        "location": device.location,
        "signal": signal,
        "mobile_data_connection": _data(db, device, line, signal),
        "sim": device.sim,
        "settings": {
            "airplane_mode": device.airplane_mode,
            "mobile_data": device.mobile_data,
            "data_roaming": device.data_roaming,
            "apn": device.apn,
        },
        "messages": messages,
    }


def _update(db: Database, phone_number: str, **changes: Any) -> dict[str, Any]:
    device = db.get(Device, phone_key(phone_number))
    updated = device.model_copy(update=changes)
    if updated != device:
        db.put(updated)
    return phone_status(db, device.phone_number)


@read_tool
def check_status(db: Database, phone_number: str) -> dict[str, Any]:
    """Look at the phone's status screen: signal, mobile data connection, SIM, settings and messages.

    Args:
        phone_number: This phone's own number, e.g. '415-555-0134'.
    """
    return phone_status(db, phone_number)


@write_tool
def toggle_airplane_mode(db: Database, phone_number: str, on: bool) -> dict[str, Any]:
    """Turn airplane mode on or off.

    Args:
        phone_number: This phone's own number, e.g. '415-555-0134'.
        on: True to turn airplane mode on, False to turn it off.
    """
    return _update(db, phone_number, airplane_mode=on)


@write_tool
def toggle_mobile_data(db: Database, phone_number: str, on: bool) -> dict[str, Any]:
    """Turn mobile data on or off.

    Args:
        phone_number: This phone's own number, e.g. '415-555-0134'.
        on: True to turn mobile data on, False to turn it off.
    """
    return _update(db, phone_number, mobile_data=on)


@write_tool
def toggle_data_roaming(db: Database, phone_number: str, on: bool) -> dict[str, Any]:
    """Turn the phone's data roaming switch on or off (needed for data abroad).

    Args:
        phone_number: This phone's own number, e.g. '415-555-0134'.
        on: True to allow data while roaming, False to block it.
    """
    return _update(db, phone_number, data_roaming=on)


@write_tool
def reset_apn_settings(db: Database, phone_number: str) -> dict[str, Any]:
    """Reset the access point name (APN) to the carrier's default; takes effect after a restart.

    Args:
        phone_number: This phone's own number, e.g. '415-555-0134'.
    """
    device = db.get(Device, phone_key(phone_number))
    if device.apn == CORRECT_APN:
        return phone_status(db, device.phone_number)
    return _update(db, phone_number, apn=CORRECT_APN, restart_pending=True)


@write_tool
def reseat_sim(db: Database, phone_number: str) -> dict[str, Any]:
    """Take the SIM card out and put it back in firmly.

    Args:
        phone_number: This phone's own number, e.g. '415-555-0134'.
    """
    return _update(db, phone_number, sim="active")


@write_tool
def restart_device(db: Database, phone_number: str) -> dict[str, Any]:
    """Switch the phone off and on again; pending network settings take effect.

    Args:
        phone_number: This phone's own number, e.g. '415-555-0134'.
    """
    return _update(db, phone_number, restart_pending=False)


USER_TOOLS = [
    check_status,
    toggle_airplane_mode,
    toggle_mobile_data,
    toggle_data_roaming,
    reset_apn_settings,
    reseat_sim,
    restart_device,
]
