"""The sockets an agent's worker may make, enforced by a seccomp filter: what Landlock does not
filter (UDP, raw sockets, pathname unix sockets) is refused at `socket()`.

Why at `socket()`: seccomp sees a system call's arguments as numbers, never the memory they
point to, so the address of a `connect` or a `sendto` is out of its sight; the family, type and
protocol of a new socket are plain numbers. So the filter allows, per new socket:
- `AF_INET`/`AF_INET6` stream sockets of TCP (protocol 0 or 6), whose `connect`/`bind` Landlock
  filters by port, and datagram sockets of UDP only when the agent declared a UDP port (then to
  every port: nothing in the kernel narrows UDP by port);
- `AF_NETLINK` of `NETLINK_ROUTE` (the C library asks the kernel for its interface addresses when
  it resolves a name), and no other netlink protocol: `NETLINK_USERSOCK` lets any two processes
  message each other (two trials running at once), `NETLINK_SOCK_DIAG` lists every socket of the
  machine, their owners and ports;
and refuses every other family with `EACCES`: `AF_UNIX` (the pathname sockets of a Postgres or a
Ray on the same machine: Landlock ABI 6 scopes abstract sockets, not pathname ones), `AF_PACKET`,
raw sockets, SCTP and MPTCP (Landlock's TCP rules do not cover them). `socketpair()` stays
allowed: a pair reaches nobody but its two ends (asyncio makes one for its loop).

It also refuses `io_uring_setup` (an io_uring submits socket operations the filter never sees),
`name_to_handle_at` and `open_by_handle_at` (files by handle, not by path: Landlock refuses the
open, measured; the handle alone still tells a file's identity), System V IPC (shared memory,
message queues and semaphores: objects of the machine's IPC namespace, named by a number and no
path, that outlive the process that made them, so one trial could leave a message the next one
reads; issue 56, route 4's class) and the kernel's keyrings (`add_key`, `request_key`,
`keyctl`: a user's keyring outlives its processes, and a trial's user id, `UID_BASE` + its PID,
comes back once PIDs wrap; Docker's default profile refuses them for the same reason), and
`memfd_create` (a file in memory that is no address space: `RLIMIT_AS` never counts it and
`RLIMIT_FSIZE` bounds each one, not how many, so a trial could hold any amount of the machine's
memory; route 8's class), and every system call made
under another architecture's numbering (`int 0x80` from a 64-bit process, the x32 ABI), whose
numbers the filter would misread.

The filter is installed after `PR_SET_NO_NEW_PRIVS` (Landlock sets it) and binds everything the
worker starts. On an architecture castbench has no numbers for, `install` raises: the worker
then refuses to run the agent, as for a missing Landlock.
"""

from __future__ import annotations

import ctypes
import os
import platform
import socket
import struct
from typing import Any

__all__ = ["SeccompError", "install", "supported"]

_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000

# BPF instruction classes and modes (linux/filter.h)
_LD_W_ABS = 0x00 | 0x00 | 0x20
_JMP_JEQ_K = 0x05 | 0x10 | 0x00
_JMP_JGE_K = 0x05 | 0x30 | 0x00
_ALU_AND_K = 0x04 | 0x50 | 0x00
_RET_K = 0x06 | 0x00

# struct seccomp_data: nr (0), arch (4), instruction_pointer (8), args[6] (16, 8 bytes each)
_NR, _ARCH = 0, 4


def _arg(index: int) -> int:
    """Offset of the low 32 bits of argument `index` (little-endian)."""
    return 16 + 8 * index


_X32_BIT = 0x40000000


class _Arch:
    def __init__(self, audit: int, socket_nr: int, refused: tuple[int, ...], x32: bool) -> None:
        self.audit, self.socket, self.refused, self.x32 = audit, socket_nr, refused, x32


_ARCHES = {
    # refused: io_uring_setup, name_to_handle_at, open_by_handle_at; System V IPC (shmget, shmat,
    # shmctl, shmdt, semget, semop, semctl, semtimedop, msgget, msgsnd, msgrcv, msgctl); the
    # kernel's keyrings (add_key, request_key, keyctl); memfd_create
    "x86_64": _Arch(
        0xC000003E,
        41,
        (425, 303, 304, 29, 30, 31, 67, 64, 65, 66, 220, 68, 69, 70, 71, 248, 249, 250, 319),
        x32=True,
    ),
    "aarch64": _Arch(
        0xC00000B7,
        198,
        (425, 264, 265, *range(186, 198), 217, 218, 219, 279),
        x32=False,
    ),
}


class SeccompError(OSError):
    """The filter could not be installed."""


def supported() -> bool:
    return platform.machine() in _ARCHES and platform.system() == "Linux"


def _instruction(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k & 0xFFFFFFFF)


def program(udp: bool) -> list[bytes]:
    """The filter's instructions for this machine (`udp`: datagram sockets of UDP allowed)."""
    arch = _ARCHES.get(platform.machine())
    if arch is None:
        raise SeccompError(f"no seccomp numbers for {platform.machine()}")
    deny = _RET_ERRNO | 13  # EACCES, as Landlock answers
    # labels are resolved by counting: each jump names how many instructions it skips
    body: list[tuple[int, int, int, int]] = []

    def emit(code: int, jt: int = 0, jf: int = 0, k: int = 0) -> None:
        body.append((code, jt, jf, k))

    emit(_LD_W_ABS, k=_ARCH)
    emit(_JMP_JEQ_K, 1, 0, arch.audit)
    emit(_RET_K, k=deny)  # another architecture's numbering
    emit(_LD_W_ABS, k=_NR)
    if arch.x32:
        emit(_JMP_JGE_K, 0, 1, _X32_BIT)
        emit(_RET_K, k=deny)
    for number in arch.refused:
        emit(_JMP_JEQ_K, 0, 1, number)
        emit(_RET_K, k=deny)
    emit(_JMP_JEQ_K, 1, 0, arch.socket)
    emit(_RET_K, k=_RET_ALLOW)  # any other call
    # socket(family, type, protocol)
    emit(_LD_W_ABS, k=_arg(0))
    emit(_JMP_JEQ_K, 0, 4, socket.AF_NETLINK)
    emit(_LD_W_ABS, k=_arg(2))  # NETLINK_ROUTE only: no NETLINK_USERSOCK between processes, no sock_diag
    emit(_JMP_JEQ_K, 0, 1, 0)
    emit(_RET_K, k=_RET_ALLOW)
    emit(_RET_K, k=deny)
    emit(_JMP_JEQ_K, 2, 0, socket.AF_INET)
    emit(_JMP_JEQ_K, 1, 0, socket.AF_INET6)
    emit(_RET_K, k=deny)  # AF_UNIX, AF_PACKET, every other family
    emit(_LD_W_ABS, k=_arg(2))  # protocol: the default, TCP or UDP; never SCTP, MPTCP, raw
    emit(_JMP_JEQ_K, 3, 0, 0)
    emit(_JMP_JEQ_K, 2, 0, socket.IPPROTO_TCP)
    emit(_JMP_JEQ_K, 1, 0, socket.IPPROTO_UDP)
    emit(_RET_K, k=deny)
    emit(_LD_W_ABS, k=_arg(1))
    emit(_ALU_AND_K, k=0xF)  # the type, less SOCK_NONBLOCK / SOCK_CLOEXEC
    emit(_JMP_JEQ_K, 0, 1, socket.SOCK_STREAM)
    emit(_RET_K, k=_RET_ALLOW)
    if udp:
        emit(_JMP_JEQ_K, 0, 1, socket.SOCK_DGRAM)
        emit(_RET_K, k=_RET_ALLOW)
    emit(_RET_K, k=deny)  # datagrams (UDP undeclared, ICMP), raw, sequenced packets
    return [_instruction(*item) for item in body]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(libc: Any, udp: bool) -> None:
    """Bind this thread (and what it starts) to the filter; `PR_SET_NO_NEW_PRIVS` must be set."""
    code = b"".join(program(udp))
    buffer = ctypes.create_string_buffer(code, len(code))
    fprog = _SockFprog(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p).value)
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        number = ctypes.get_errno()
        raise SeccompError(number, f"prctl(PR_SET_SECCOMP): {os.strerror(number)}")
