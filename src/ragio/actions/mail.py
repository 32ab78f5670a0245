"""Sending an e-mail action over SMTP, encrypted: STARTTLS (``SMTP_SECURITY=starttls``,
the default; a server that does not offer it gets nothing) or TLS from the first byte
(``tls``). The server's certificate is checked against the system's authorities plus
ACTIONS_CA_BUNDLE. ``SMTP_USER``/``SMTP_PASSWORD`` log in after encryption is up. One
recipient, from ``EMAIL_FROM``; the allow list was checked before (``Catalog.refusal``)
and is checked here once more. smtplib blocks, so it runs in a worker thread, bounded by
ACTIONS_TIMEOUT_SECONDS."""

from __future__ import annotations

import logging
import smtplib
import ssl
from email.message import EmailMessage
from email.utils import formatdate, make_msgid, parseaddr

import trio

from ragcore.actions.effects import Sent
from ragcore.actions.kinds import EmailAction, recipient_allowed
from ragcore.settings import Settings
from ragio.targets.tls import CertificatesUnreadable, settings_context

log = logging.getLogger(__name__)


class _NoStartTLS(Exception):
    pass


def build_message(settings: Settings, action: EmailAction, action_id: str) -> EmailMessage:
    message = EmailMessage()
    message["From"] = settings.email_from
    message["To"] = action.to
    message["Subject"] = action.subject
    message["Date"] = formatdate(localtime=False, usegmt=True)
    message["Message-ID"] = make_msgid(idstring=action_id, domain=_domain(_sender(settings)))
    message["X-Ragchat-Action"] = action_id
    message.set_content(action.body)
    return message


def _sender(settings: Settings) -> str:
    """The envelope sender: EMAIL_FROM's address, also when it carries a display name."""
    return parseaddr(settings.email_from)[1] or settings.email_from


def _domain(address: str) -> str:
    return address.rpartition("@")[2] or "ragchat.invalid"


def _send(
    settings: Settings, message: EmailMessage, context: ssl.SSLContext, timeout: float
) -> None:
    host, port = settings.smtp_host, settings.smtp_port
    if settings.smtp_security == "tls":
        client: smtplib.SMTP = smtplib.SMTP_SSL(host, port, timeout=timeout, context=context)
    else:
        client = smtplib.SMTP(host, port, timeout=timeout)
    with client:
        client.ehlo()
        if settings.smtp_security != "tls":
            if not client.has_extn("starttls"):
                raise _NoStartTLS
            client.starttls(context=context)
            client.ehlo()
        if settings.smtp_user:
            client.login(settings.smtp_user, settings.smtp_password)
        refused = client.send_message(
            message, from_addr=_sender(settings), to_addrs=[str(message["To"])]
        )
        if refused:
            raise smtplib.SMTPRecipientsRefused(refused)


async def send_email(settings: Settings, action: EmailAction, action_id: str) -> Sent:
    """Send ``action``; never raises. ``ok`` only when the server accepted the message."""
    if not settings.smtp_host or not settings.email_from:
        return Sent(False, "e-mail is not configured (SMTP_HOST, EMAIL_FROM)")
    if not recipient_allowed(action.to, tuple(settings.email_allowed_recipients)):
        return Sent(False, f"{action.to} is not on EMAIL_ALLOWED_RECIPIENTS")
    try:
        context = settings_context(settings)
    except CertificatesUnreadable as error:
        return Sent(False, str(error))
    message = build_message(settings, action, action_id)
    timeout = float(settings.actions_timeout_seconds)
    where = f"{settings.smtp_host}:{settings.smtp_port}"
    with trio.move_on_after(timeout * 2):  # connect, then each reply: smtplib's own timeout
        try:
            await trio.to_thread.run_sync(
                _send, settings, message, context, timeout, abandon_on_cancel=True
            )
        except _NoStartTLS:
            return Sent(
                False,
                f"{where} does not offer STARTTLS; mail is never sent in clear "
                "(SMTP_SECURITY=tls for a TLS port)",
            )
        except smtplib.SMTPAuthenticationError as error:
            return Sent(False, f"{where} refused the login (SMTP {error.smtp_code})")
        except smtplib.SMTPRecipientsRefused:
            return Sent(False, f"{where} refused the recipient {action.to}")
        except smtplib.SMTPResponseException as error:
            return Sent(False, f"{where} answered SMTP {error.smtp_code}")
        except ssl.SSLCertVerificationError:
            return Sent(
                False, f"{where}: its TLS certificate is not trusted (see ACTIONS_CA_BUNDLE)"
            )
        except (smtplib.SMTPException, OSError) as error:
            return Sent(False, f"{where}: {type(error).__name__}")
        return Sent(True, f"accepted by {where} for {action.to}")
    return Sent(False, f"{where}: timed out")
