"""The research engines' contracts on the fake web (backend/testing/fake_web.py), for tests and
bench.research --web. Each speaks its vendor's request and response shape:

    POST /v1/web-search                      Bocha (Bearer key; `summary` adds an AI summary per hit,
                                             which, like the real one, keeps only the first paragraph)
    POST /search with an X-API-KEY header     Serper (organic, plus answerBox/knowledgeGraph when set)
    GET  /v2/baike/lemma/get_list_by_title    Baidu Baike's entry list of a name (Bearer key)
    GET  /v2/baike/lemma/get_content          one entry in full (search_type=lemmaId|lemmaTitle)
    GET  /graph/v1/paper/search               Semantic Scholar (x-api-key optional; a wrong one: 403)
    GET  /entrez/eutils/esearch.fcgi          NCBI E-utilities: PubMed ids (json),
         /entrez/eutils/esummary.fcgi         their summaries (json),
         /entrez/eutils/efetch.fcgi           their titles and abstracts (PubmedArticleSet xml)

Web pages carry `engines` (FakePage): a page with engines=("bocha",) is found by Bocha only, so a
benchmark can put its Chinese pages behind Bocha and its English ones behind Serper.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape

BAIKE_LIST = "/v2/baike/lemma/get_list_by_title"
BAIKE_CONTENT = "/v2/baike/lemma/get_content"
S2_SEARCH = "/graph/v1/paper/search"
EUTILS = "/entrez/eutils/"


@dataclass(frozen=True)
class BaikeEntry:
    lemma_id: int
    title: str
    desc: str
    paragraphs: tuple[str, ...]
    is_default: bool = True

    @property
    def path(self) -> str:
        return f"/baike/item/{self.lemma_id}"

    def listed(self, base: str) -> dict[str, Any]:
        return {
            "lemma_id": self.lemma_id,
            "lemma_title": self.title,
            "lemma_desc": self.desc,
            "is_default": int(self.is_default),
            "url": base + self.path,
        }

    def content(self, base: str) -> dict[str, Any]:
        abstract = self.paragraphs[0] if self.paragraphs else ""
        return {
            **self.listed(base),
            "summary": abstract[:130],
            "abstract_plain": abstract,
            "abstract_html": f"<p>{escape(abstract)}</p>",
            "content_plain": "\n".join(self.paragraphs[1:]) or None,
            "pic_url": None,
            "videos": [],
            "relations": [],
        }


@dataclass(frozen=True)
class Paper:
    paper_id: str
    title: str
    abstract: str
    year: int
    authors: tuple[str, ...] = ()
    pmid: str | None = None  # set: PubMed (NCBI) has it too

    def s2(self, base: str) -> dict[str, Any]:
        return {
            "paperId": self.paper_id,
            "title": self.title,
            "abstract": self.abstract,
            "url": f"{base}/papers/{self.paper_id}",
            "year": self.year,
            "authors": [{"authorId": str(i), "name": n} for i, n in enumerate(self.authors)],
            "externalIds": {"PubMed": self.pmid} if self.pmid else {},
        }

    def pubmed_xml(self) -> str:
        authors = "".join(
            f"<Author><LastName>{escape(n.split()[-1])}</LastName>"
            f"<ForeName>{escape(' '.join(n.split()[:-1]))}</ForeName></Author>"
            for n in self.authors
        )
        return (
            f"<PubmedArticle><MedlineCitation><PMID>{self.pmid}</PMID><Article>"
            f"<Journal><JournalIssue><PubDate><Year>{self.year}</Year></PubDate></JournalIssue></Journal>"
            f"<ArticleTitle>{escape(self.title)}</ArticleTitle>"
            f"<Abstract><AbstractText>{escape(self.abstract)}</AbstractText></Abstract>"
            f"<AuthorList>{authors}</AuthorList></Article></MedlineCitation></PubmedArticle>"
        )


BAIKE_ENTRIES: tuple[BaikeEntry, ...] = (
    BaikeEntry(
        901,
        "张欣",
        "中国内地男性配音演员",
        (
            "张欣，中国内地男性配音演员，长期为电视剧和动画片配音。",
            "配音作品：2007年电视剧《贞观之治》中为长孙无忌（马少骅 饰）配音；"
            "动画《猫眼三姐妹》国语版中为男主角配音。",
        ),
    ),
    BaikeEntry(
        902, "张欣", "中国内地女作家", ("张欣，中国内地女作家，以都市题材小说著称。",), is_default=False
    ),
    BaikeEntry(
        903,
        "都江堰",
        "四川省成都市代管县级市",
        (
            "都江堰市位于四川省成都平原西北部，因都江堰水利工程而得名。",
            "都江堰水利工程由李冰父子主持修建，约建于公元前二五六年。",
        ),
    ),
)

PAPERS: tuple[Paper, ...] = (
    Paper(
        "s2-attention",
        "Attention Is All You Need",
        "We propose the Transformer, a network architecture based solely on attention mechanisms, "
        "dispensing with recurrence and convolutions entirely.",
        2017,
        ("Ashish Vaswani", "Noam Shazeer"),
    ),
    Paper(
        "s2-crispr",
        "CRISPR-Cas9 gene editing in human cells",
        "We show that the Cas9 nuclease guided by RNA edits genes in human cells with high efficiency, "
        "and discuss clinical applications for inherited disease.",
        2013,
        ("Le Cong", "Feng Zhang"),
        pmid="23287718",
    ),
)


def ncbi_summary(papers: list[Paper]) -> dict[str, Any]:
    """esummary's json: result.uids and one record per id."""
    result: dict[str, Any] = {"uids": [p.pmid for p in papers]}
    for p in papers:
        result[str(p.pmid)] = {
            "uid": p.pmid,
            "pubdate": str(p.year),
            "source": "Fake J",
            "title": p.title,
            "authors": [{"name": n, "authtype": "Author"} for n in p.authors],
        }
    return {"header": {"type": "esummary", "version": "0.3"}, "result": result}


def pubmed_set(papers: list[Paper]) -> str:
    body = "".join(p.pubmed_xml() for p in papers)
    return f'<?xml version="1.0" ?>\n<PubmedArticleSet>{body}</PubmedArticleSet>'
