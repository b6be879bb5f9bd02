"""Outlook: ``.msg`` files and ``.pst``/``.ost`` stores, as Documents: a message, then its
attachments, as :mod:`engine.ingest.mail` gives an RFC 822 message.

* A ``.msg`` file is one message saved by Outlook: an OLE compound file ([MS-CFB]) of MAPI
  properties ([MS-OXMSG]), read with olefile (BSD): :mod:`engine.ingest.outlook_msg`.
* A ``.pst`` (personal folders) or ``.ost`` (offline copy of an Exchange or Outlook.com
  mailbox) is a store of folders, read with libpff's Python binding ``pypff``
  (libpff-python, LGPL-3.0-or-later; docs/formats.md says what that asks of the bundled app):
  :mod:`engine.ingest.outlook_pst`. Its folders are the mailboxes ("Inbox", "Sent Items",
  "Projects/2024"); its mail, meetings, posts, tasks and notes are indexed, its contacts and
  system items are not. Without pypff a store is listed as skipped, naming the package it needs.

Both give a message as MAPI properties, whose fields, body and attachments become Documents
the same way: :mod:`engine.ingest.outlook_mapi` (the message model, its Documents, the
compressed RTF). A message's fields come from its Internet headers when it kept them (received
mail), else from its MAPI properties (sent items, drafts); its body is the plain text, else the
HTML, else the compressed RTF ([MS-OXRTFCP]), cleaned as any message's (``mail.body_text``).
Attachments in a readable format become documents of their own, others are found by their
name, as in ``engine.ingest.mail``.

This module gathers their public names. Importing it (``engine.ingest.extract`` does) imports
:mod:`engine.ingest.outlook_msg`, which adds the .msg reader to
``engine.ingest.mail.MESSAGE_READERS``, so that a .msg attached to a message is read as one.
"""

from __future__ import annotations

from engine.ingest.outlook_mapi import (
    ATTACH_EMBEDDED_MSG,
    PR_ADDRTYPE,
    PR_ATTACH_CONTENT_ID,
    PR_ATTACH_DATA,
    PR_ATTACH_FILENAME,
    PR_ATTACH_LONG_FILENAME,
    PR_ATTACH_METHOD,
    PR_ATTACH_MIME_TAG,
    PR_ATTACHMENT_HIDDEN,
    PR_BODY,
    PR_CLIENT_SUBMIT_TIME,
    PR_CREATION_TIME,
    PR_DISPLAY_BCC,
    PR_DISPLAY_CC,
    PR_DISPLAY_NAME,
    PR_DISPLAY_TO,
    PR_EMAIL_ADDRESS,
    PR_HTML,
    PR_IN_REPLY_TO_ID,
    PR_INTERNET_CPID,
    PR_INTERNET_MESSAGE_ID,
    PR_INTERNET_REFERENCES,
    PR_MESSAGE_CLASS,
    PR_MESSAGE_CODEPAGE,
    PR_MESSAGE_DELIVERY_TIME,
    PR_RECIPIENT_TYPE,
    PR_RTF_COMPRESSED,
    PR_SENDER_ADDRTYPE,
    PR_SENDER_EMAIL,
    PR_SENDER_NAME,
    PR_SENDER_SMTP_ADDRESS,
    PR_SENT_REPRESENTING_ADDRTYPE,
    PR_SENT_REPRESENTING_EMAIL,
    PR_SENT_REPRESENTING_NAME,
    PR_SENT_REPRESENTING_SMTP_ADDRESS,
    PR_SMTP_ADDRESS,
    PR_SUBJECT,
    PR_TRANSPORT_MESSAGE_HEADERS,
    Attachment,
    MapiMessage,
    decode_html,
    lzfu_decompress,
    mapi_fields,
    rtf_text,
)
from engine.ingest.outlook_msg import (
    OLE_MAGIC,
    is_msg,
    msg_documents,
    read_msg,
)
from engine.ingest.outlook_pst import (
    INDEXED_CLASSES,
    WANTED,
    WRAPPER_FOLDERS,
    iter_outlook_store,
)

__all__ = [
    "ATTACH_EMBEDDED_MSG",
    "Attachment",
    "INDEXED_CLASSES",
    "MapiMessage",
    "OLE_MAGIC",
    "PR_ADDRTYPE",
    "PR_ATTACHMENT_HIDDEN",
    "PR_ATTACH_CONTENT_ID",
    "PR_ATTACH_DATA",
    "PR_ATTACH_FILENAME",
    "PR_ATTACH_LONG_FILENAME",
    "PR_ATTACH_METHOD",
    "PR_ATTACH_MIME_TAG",
    "PR_BODY",
    "PR_CLIENT_SUBMIT_TIME",
    "PR_CREATION_TIME",
    "PR_DISPLAY_BCC",
    "PR_DISPLAY_CC",
    "PR_DISPLAY_NAME",
    "PR_DISPLAY_TO",
    "PR_EMAIL_ADDRESS",
    "PR_HTML",
    "PR_INTERNET_CPID",
    "PR_INTERNET_MESSAGE_ID",
    "PR_INTERNET_REFERENCES",
    "PR_IN_REPLY_TO_ID",
    "PR_MESSAGE_CLASS",
    "PR_MESSAGE_CODEPAGE",
    "PR_MESSAGE_DELIVERY_TIME",
    "PR_RECIPIENT_TYPE",
    "PR_RTF_COMPRESSED",
    "PR_SENDER_ADDRTYPE",
    "PR_SENDER_EMAIL",
    "PR_SENDER_NAME",
    "PR_SENDER_SMTP_ADDRESS",
    "PR_SENT_REPRESENTING_ADDRTYPE",
    "PR_SENT_REPRESENTING_EMAIL",
    "PR_SENT_REPRESENTING_NAME",
    "PR_SENT_REPRESENTING_SMTP_ADDRESS",
    "PR_SMTP_ADDRESS",
    "PR_SUBJECT",
    "PR_TRANSPORT_MESSAGE_HEADERS",
    "WANTED",
    "WRAPPER_FOLDERS",
    "decode_html",
    "is_msg",
    "iter_outlook_store",
    "lzfu_decompress",
    "mapi_fields",
    "msg_documents",
    "read_msg",
    "rtf_text",
]
