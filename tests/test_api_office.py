"""Office files over HTTP (issue 29): a Word report, a slide deck, a workbook, a CSV, an EPUB and a PDF
uploaded together, each found by a word only it holds, and each source saying where in its file the
passage is (page, slide, sheet and rows, chapter); hostile and broken files refused with nothing lost."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from backend.api.app import create_app
from backend.testing.office_files import make_docx, make_epub, make_pptx, make_xlsx, zipped
from tests.test_loaders import make_pdf

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

# Each marker is in one file, at a known place.
FILES = [
    (
        "report.docx",
        make_docx(
            [
                ("Heading1", "Overview"),
                "Nothing special here.",
                ("page", ""),
                ("Heading1", "Risks"),
                "The zorbaxite supply is the main risk.",
            ]
        ),
        DOCX,
    ),
    (
        "deck.pptx",
        make_pptx(
            [
                {"title": "Agenda", "body": ["Welcome"]},
                {"title": "Plans", "body": ["Build the quindleworth mill"]},
            ]
        ),
        PPTX,
    ),
    (
        "budget.xlsx",
        make_xlsx(
            {"Summary": [["Total"], [10]], "Costs": [["Item", "Cost"], ["rent", 5], ["plaxitude fees", 7]]}
        ),
        XLSX,
    ),
    ("people.csv", b"name,city\nAda,London\nGrace,Vorthelmsburg\n", "text/csv"),
    (
        "story.epub",
        make_epub([("Beginning", "A quiet start."), ("Middle", "The snarfblatt appears.")]),
        "application/epub+zip",
    ),
    (
        "paper.pdf",
        make_pdf(
            [
                "Introduction text. " * 30,
                "More filler words here. " * 30 + "Results of the glimmerstone trial.",
            ]
        ),
        "application/pdf",
    ),
]
EXPECTED = {  # marker -> (file, what its source says)
    "zorbaxite": ("report.docx", {"page_start": 2, "page_end": 2}, "p. 2"),
    "quindleworth": ("deck.pptx", {"slide_start": 2, "slide_end": 2}, "slide 2"),
    "plaxitude": (
        "budget.xlsx",
        {"sheet_start": 2, "sheet_end": 2, "row_start": 1, "row_end": 3},
        "sheet 2, rows 1–3",
    ),
    "Vorthelmsburg": ("people.csv", {"row_start": 1, "row_end": 3}, "rows 1–3"),
    "snarfblatt": ("story.epub", {"chapter_start": 2, "chapter_end": 2}, "ch. 2"),
    "glimmerstone": ("paper.pdf", {"page_start": 2, "page_end": 2}, "p. 2"),
}


def upload(client, files):
    return client.post("/documents/upload", files=[("files", f) for f in files])


@pytest.fixture
def office_corpus(client):
    response = upload(client, FILES)
    assert response.status_code == 200, response.text
    assert response.json()["counts"]["created"] == len(FILES)
    return client


@pytest.mark.parametrize("marker", sorted(EXPECTED))
def test_each_file_is_found_by_its_marker_and_the_hit_says_where_it_is(office_corpus, marker):
    filename, place, label = EXPECTED[marker]
    response = office_corpus.post("/search", json={"query": marker, "mode": "fulltext", "top_k": 3})
    assert response.status_code == 200, response.text
    top = response.json()["results"][0]
    assert marker in top["content"]
    assert top["metadata"]["filename"] == filename
    assert top["provenance"]["label"] == label
    assert place.items() <= top["provenance"].items()
    assert "provenance" not in top["metadata"]  # said once, beside the metadata


def test_office_headings_become_the_hits_heading(office_corpus):
    hits = office_corpus.post("/search", json={"query": "plaxitude", "mode": "fulltext"}).json()["results"]
    assert hits[0]["heading"] == "Costs"  # the sheet's name
    assert "| Item | Cost |" in hits[0]["content"]  # a table with its header
    hits = office_corpus.post("/search", json={"query": "zorbaxite", "mode": "fulltext"}).json()["results"]
    assert hits[0]["heading"] == "Risks"


def test_a_chat_answer_cites_the_page_and_keeps_it_in_the_conversation(office_corpus, scripted_llm):
    scripted_llm.answers = ["The main risk is the zorbaxite supply [1]."]
    response = office_corpus.post(
        "/chat", json={"message": "What is the zorbaxite risk?", "mode": "fulltext"}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    cited = body["sources"][0]
    assert cited["cited"] is True
    assert cited["title"] == "report"
    assert cited["provenance"]["label"] == "p. 2"
    stored = office_corpus.get(f"/conversations/{body['conversation_id']}/messages").json()[1]["sources"][0]
    assert stored["provenance"] == cited["provenance"]


def test_a_deleted_documents_stored_source_keeps_no_name(office_corpus, scripted_llm):
    """Provenance holds numbers only: the sheet's name is the heading, which erasure blanks."""
    scripted_llm.answers = ["Fees [1]."]
    body = office_corpus.post("/chat", json={"message": "plaxitude fees", "mode": "fulltext"}).json()
    source = body["sources"][0]
    assert source["heading"] == "Costs"
    assert office_corpus.delete(f"/documents/{source['document_id']}").status_code == 204
    stored = office_corpus.get(f"/conversations/{body['conversation_id']}/messages").json()[1]["sources"][0]
    assert stored["deleted"] is True
    assert stored["heading"] == ""
    assert "Costs" not in str(stored)


def test_a_zip_bomb_is_a_413_and_loses_nothing_stored(make_services):
    with TestClient(create_app(services=make_services(parse_max_unzipped_mb=1))) as client:
        assert upload(client, [FILES[0]]).status_code == 200
        bomb = zipped({"[Content_Types].xml": "<Types/>", "word/document.xml": b"\0" * (2 * 1024 * 1024)})
        response = upload(client, [FILES[1], ("bomb.docx", bomb, DOCX)])
        assert response.status_code == 413, response.text
        assert response.json()["detail"] == (
            "bomb.docx: the Word document unpacks to 2 MB in 2 parts; "
            "the limit is 1 MB (PARSE_MAX_UNZIPPED_MB)"
        )
        listed = client.get("/documents").json()
        assert [d["title"] for d in listed["items"]] == ["report"]


def test_broken_and_protected_files_fail_alone_with_a_reason(client):
    files = [
        FILES[3],
        ("locked.xlsx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 512, XLSX),
        ("broken.pptx", b"PK\x03\x04 truncated", PPTX),
        ("empty.docx", make_docx([]), DOCX),
    ]
    response = upload(client, files)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["counts"]["created"] == 1
    errors = {d["external_id"]: d["error"] for d in body["documents"] if d["status"] == "failed"}
    assert set(errors) == {"locked.xlsx", "broken.pptx", "empty.docx"}
    assert "password-protected" in errors["locked.xlsx"]
    assert "cannot read the PowerPoint file" in errors["broken.pptx"]
    assert errors["empty.docx"] == "empty file"


def test_the_cited_passage_reads_in_its_surrounding_text(office_corpus):
    hit = office_corpus.post("/search", json={"query": "plaxitude", "mode": "fulltext"}).json()["results"][0]
    place = hit["provenance"]
    response = office_corpus.get(
        f"/documents/{hit['document_id']}/text",
        params={"start": place["char_start"], "end": place["char_end"], "around": 20},
    )
    assert response.status_code == 200, response.text
    window = response.json()
    passage = window["text"][window["passage_start"] : window["passage_end"]]
    assert "| plaxitude fees | 7 |" in passage
    assert hit["content"].endswith(passage)
    assert window["start"] == max(0, place["char_start"] - 20)
    # the text before the passage is the document's: the end of the first sheet
    assert "| 10 |" in window["text"][: window["passage_start"]]


@pytest.mark.parametrize(
    ("params", "status"),
    [
        ({"start": 5, "end": 1}, 422),
        ({"start": -1, "end": 3}, 422),
        ({"start": 10**7, "end": 10**7 + 1}, 404),
    ],
)
def test_bad_text_requests_are_4xx(office_corpus, params, status):
    document_id = office_corpus.get("/documents").json()["items"][0]["id"]
    assert office_corpus.get(f"/documents/{document_id}/text", params=params).status_code == status
    missing = "00000000-0000-0000-0000-00000000beef"
    assert office_corpus.get(f"/documents/{missing}/text", params={"start": 0, "end": 1}).status_code == 404


@pytest.mark.parametrize(
    ("question", "place"),
    [("What is the zorbaxite supply risk?", ", p. 2"), ("zorbaxite 供应有什么风险？", "，第 2 页")],
)
def test_a_research_bibliography_says_the_page_in_the_reports_language(office_corpus, question, place):
    response = office_corpus.post("/research", json={"question": question, "web": False})
    assert response.status_code == 200, response.text
    body = response.json()
    [n] = [s["n"] for s in body["sources"] if s["title"] == "report"]
    assert f"- [{n}] report > Risks{place}\n" in body["report"]
