"""A real SMTP server (aiosmtpd) for receipt tests: records each message, and answers chosen
recipients with a refusal (5xx) or a deferral (4xx) a given number of times."""

from __future__ import annotations

import email
import email.policy
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Any

from aiosmtpd.controller import Controller

from tests.harness import free_port


@dataclass
class Received:
    mail_from: str
    rcpt_tos: list[str]
    message: EmailMessage

    @property
    def body(self) -> str:
        part = self.message.get_body(preferencelist=("plain",))
        assert part is not None
        return str(part.get_content())


@dataclass
class Mailbox:
    port: int = 0
    received: list[Received] = field(default_factory=list)
    refuse: dict[str, str] = field(default_factory=dict)  # recipient -> the 5xx reply to RCPT
    defer: dict[str, int] = field(default_factory=dict)  # recipient -> how many 451 replies before 250
    rcpt_attempts: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}"

    def to(self, recipient: str) -> list[Received]:
        with self.lock:
            return [item for item in self.received if recipient in item.rcpt_tos]

    def attempts(self, recipient: str) -> int:
        with self.lock:
            return self.rcpt_attempts.get(recipient, 0)


class RecordingHandler:
    def __init__(self, mailbox: Mailbox) -> None:
        self.mailbox = mailbox

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, rcpt_options: list[str]
    ) -> str:
        box = self.mailbox
        with box.lock:
            box.rcpt_attempts[address] = box.rcpt_attempts.get(address, 0) + 1
            if address in box.refuse:
                return box.refuse[address]
            if box.defer.get(address, 0) > 0:
                box.defer[address] -= 1
                return "451 4.7.1 Greylisted, please try again later"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        assert isinstance(message, EmailMessage)
        with self.mailbox.lock:
            self.mailbox.received.append(Received(envelope.mail_from, list(envelope.rcpt_tos), message))
        return "250 Message accepted for delivery"


@contextmanager
def mail_server() -> Iterator[Mailbox]:
    mailbox = Mailbox(port=free_port())
    controller = Controller(RecordingHandler(mailbox), hostname="127.0.0.1", port=mailbox.port)
    controller.start()
    try:
        yield mailbox
    finally:
        controller.stop()
