"""Reading mail as people read it: charsets, encoded headers, HTML, threads, attachments."""

from __future__ import annotations

from email.header import Header
from email.mime.application import MIMEApplication
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText
from email.utils import formataddr

from sources.email import imap_utf7, quote_mailbox
from sources.mime import decode_header_value, html_to_text, key_hash, parse_mail


def test_a_gb2312_mail_with_an_encoded_subject_and_sender_reads_as_chinese() -> None:
    msg = MIMEText("本周完成了数据库迁移，下周跟进性能问题。", "plain", "gb2312")
    msg["Subject"] = Header("周报：数据库迁移", "gb2312").encode()
    msg["From"] = formataddr((str(Header("张伟", "utf-8")), "zhang@example.com"))
    msg["Message-ID"] = "<weekly-1@example.com>"
    mail = parse_mail(msg.as_bytes())
    assert mail.subject == "周报：数据库迁移"
    assert mail.sender == "张伟 <zhang@example.com>"
    assert mail.text == "本周完成了数据库迁移，下周跟进性能问题。"
    assert mail.key == key_hash("message-id", "<weekly-1@example.com>")


def test_gbk_only_characters_under_a_gb2312_label_still_decode() -> None:
    # "镕" is in GBK but not in GB2312: mailers label such text gb2312 anyway.
    raw = "Subject: =?gb2312?B?{}?=\r\n\r\n".format(
        __import__("base64").b64encode("朱镕基".encode("gbk")).decode()
    ).encode() + "朱镕基".encode("gbk")
    raw = raw.replace(b"\r\n\r\n", b"\r\nContent-Type: text/plain; charset=gb2312\r\n\r\n", 1)
    mail = parse_mail(raw)
    assert mail.subject == "朱镕基" and mail.text == "朱镕基"


def test_raw_utf8_headers_and_an_unknown_charset_do_not_break_reading() -> None:
    raw = (
        "Subject: 会议纪要 raw\r\nFrom: 李娜 <li@example.com>\r\n"
        "Content-Type: text/plain; charset=x-made-up\r\n\r\n会议内容"
    ).encode()
    mail = parse_mail(raw)
    assert mail.subject == "会议纪要 raw"
    assert mail.sender == "李娜 <li@example.com>"
    assert mail.text == "会议内容"


def test_text_plain_is_preferred_and_html_only_mail_is_turned_into_text() -> None:
    both = MIMEMultipart("alternative")
    both.attach(MIMEText("the plain version", "plain", "utf-8"))
    both.attach(MIMEText("<p>the <b>html</b> version</p>", "html", "utf-8"))
    assert parse_mail(both.as_bytes()).text == "the plain version"

    html = MIMEText(
        "<html><head><title>x</title><style>p {color: red}</style></head><body>"
        "<p>Hello&nbsp;<b>World</b> &amp; friends</p><ul><li>one</li><li>two</li></ul>"
        "<script>alert('no')</script><div>第二段</div></body></html>",
        "html",
        "utf-8",
    )
    mail = parse_mail(html.as_bytes())
    assert mail.html_only
    assert mail.text == "Hello World & friends\n\n- one\n\n- two\n\n第二段"


def test_attachments_are_recorded_by_name_and_size_only() -> None:
    msg = MIMEMultipart()
    msg.attach(MIMEText("see the report", "plain", "utf-8"))
    pdf = MIMEApplication(b"%PDF" + b"x" * 1000)
    pdf.add_header("Content-Disposition", "attachment", filename=("utf-8", "", "报告.pdf"))
    msg.attach(pdf)
    image = MIMEApplication(b"\x89PNG" + b"y" * 50, "png")
    image.add_header("Content-Disposition", "inline", filename="chart.png")
    msg.attach(image)
    mail = parse_mail(msg.as_bytes())
    assert mail.text == "see the report"
    assert [(a.name, a.size) for a in mail.attachments] == [("报告.pdf", 1004), ("chart.png", 54)]
    assert "%PDF" not in mail.text


def test_threads_come_from_references_and_a_missing_message_id_uses_the_headers() -> None:
    root = parse_mail(b"Message-ID: <root@x>\r\nSubject: plan\r\n\r\nfirst")
    reply = parse_mail(
        b"Message-ID: <r2@x>\r\nIn-Reply-To: <r1@x>\r\nReferences: <root@x> <r1@x>\r\n"
        b"Subject: Re: plan\r\n\r\nsecond"
    )
    assert reply.thread_key == root.key == root.thread_key
    assert reply.references == ["<root@x>", "<r1@x>"] and reply.in_reply_to == "<r1@x>"

    headers = b"Date: Mon, 1 Jan 2024 10:00:00 +0000\r\nFrom: a@x\r\nSubject: no id\r\n\r\n"
    first, again = parse_mail(headers + b"body"), parse_mail(headers + b"body, fetched again")
    assert first.message_id is None and first.key == again.key
    assert parse_mail(headers.replace(b"no id", b"other") + b"body").key != first.key


def test_encoded_words_and_mailbox_names() -> None:
    assert decode_header_value("=?utf-8?q?caf=C3=A9?= =?utf-8?b?5LiW55WM?=") == "café世界"
    assert decode_header_value("plain text") == "plain text"
    assert html_to_text("<p>a</p>\n  <p> b  c </p><br>d") == "a\n\nb c\n\nd"
    assert imap_utf7("INBOX") == "INBOX"
    assert imap_utf7("工作 & Co") == "&XeVPXA- &- Co"
    assert quote_mailbox('say "hi"') == '"say \\"hi\\""'
