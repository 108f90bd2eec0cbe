"""The fixed messages of the conversation benchmark: small talk, and short questions about the demo corpus.

Small talk (greetings, thanks, goodbyes, "who are you", "what can you do", Chinese and English) should
get a short conversational reply: no retrieval, no "not found", no related documents (issue 26).

Demo questions: short questions a new user types about demo/corpus/, each answered in it; the first six
are the ones issue 26 found refused. Each names the strings one of which a correct answer contains
(case-insensitive) and the file that holds the answer.
"""

from __future__ import annotations

from dataclasses import dataclass

SMALL_TALK: tuple[tuple[str, str], ...] = (
    ("zh", "你好"),
    ("zh", "您好！"),
    ("zh", "早上好"),
    ("zh", "谢谢！"),
    ("zh", "谢谢你的帮助"),
    ("zh", "再见"),
    ("zh", "拜拜～"),
    ("zh", "你是谁？"),
    ("zh", "你能做什么？"),
    ("zh", "辛苦了"),
    ("en", "hello"),
    ("en", "Hi there!"),
    ("en", "good morning"),
    ("en", "thanks!"),
    ("en", "Thank you very much"),
    ("en", "goodbye"),
    ("en", "bye!"),
    ("en", "who are you?"),
    ("en", "what can you do?"),
    ("en", "hello, what can you do?"),
)


@dataclass(frozen=True)
class DemoQuestion:
    text: str
    answers: tuple[str, ...]  # one of these in the reply: answered with the right fact
    source: str  # the demo/corpus file that holds the answer


DEMO_QUESTIONS: tuple[DemoQuestion, ...] = (
    DemoQuestion("如何调 rrf_k？", ("rrf_k",), "02-three-stage-retrieval.zh.md"),
    DemoQuestion(
        "每个文档最多几条结果？", ("rag_per_doc_cap", "3 条", "默认 3"), "02-three-stage-retrieval.zh.md"
    ),
    DemoQuestion("HNSW 是干什么的？", ("HNSW",), "02-three-stage-retrieval.zh.md"),
    DemoQuestion("怎么扩容？", ("replica", "DB_POOL_MAX_SIZE"), "04-deployment.en.md"),
    DemoQuestion("谁写的 pgrag？", ("创始工程团队", "founding engineering team"), "01-overview.zh.md"),
    DemoQuestion("数据库连接池多大？", ("DB_POOL_MAX_SIZE",), "04-deployment.en.md"),
    DemoQuestion("pgrag 的作者是谁？", ("创始工程团队", "founding engineering team"), "01-overview.zh.md"),
    DemoQuestion("默认用什么嵌入模型？", ("gemini-embedding-001",), "01-overview.zh.md"),
    DemoQuestion("本地模型是多少维？", ("384",), "01-overview.zh.md"),
    DemoQuestion("三阶段检索分别做什么？", ("预取",), "02-three-stage-retrieval.zh.md"),
    DemoQuestion("rag_prefetch_k 默认是多少？", ("30",), "02-three-stage-retrieval.zh.md"),
    DemoQuestion("最低相似度默认多少？", ("0.3",), "02-three-stage-retrieval.zh.md"),
    DemoQuestion("过期来源是什么意思？", ("stale", "过期"), "03-citations.zh.md"),
    DemoQuestion("来源保存在哪里？", ("sources",), "03-citations.zh.md"),
    DemoQuestion("How do I deploy on Supabase?", ("supabase db push", "db upgrade"), "04-deployment.en.md"),
    DemoQuestion("Which languages are supported?", ("Chinese",), "06-faq.en.md"),
    DemoQuestion(
        "What happens without a Gemini API key?", ("multilingual-e5-small", "extractive"), "06-faq.en.md"
    ),
    DemoQuestion("What does rrf_k do?", ("Reciprocal Rank Fusion", "smoothing"), "05-tuning-sql.en.md"),
    DemoQuestion("Can I switch embedding models?", ("re-ingest", "cannot be searched"), "06-faq.en.md"),
    DemoQuestion("How do I see a query plan?", ("EXPLAIN",), "05-tuning-sql.en.md"),
)
