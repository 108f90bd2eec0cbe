// UI text in Chinese and English. The language defaults to the browser's and can be switched; the
// choice is remembered. Only the interface is translated: answers are in the language of the question.

const STRINGS = {
  en: {
    skip: "Skip to the message box",
    menu: "Conversations",
    newChat: "New chat",
    conversations: "Conversations",
    noConversations: "No conversations yet.",
    messages: "Messages",
    language: "中文",
    languageLabel: "切换到中文",
    signOut: "Sign out",
    signIn: "Sign in",
    signInTitle: "Sign in to ask your documents",
    email: "Email",
    password: "Password",
    signingIn: "Signing in…",
    signInFailed: "Sign-in failed: {detail}",
    signInUnconfigured: "This server uses Supabase sign-in but publishes no anon key (SUPABASE_ANON_KEY).",
    sessionExpired: "Your session ended; sign in again.",
    welcome: "Ask your documents",
    welcomeHint: "Answers cite their sources as [n]: open one to see the passage and why it was chosen.",
    library: "{count} documents in the library",
    tryAsking: "Try asking",
    placeholder: "Ask a question… (Enter to send, Shift+Enter for a new line)",
    messageLabel: "Your question",
    send: "Send",
    stop: "Stop",
    tooLong: "{count} / {max} characters: the server accepts at most {max}",
    web: "Web",
    webAuto: "when needed",
    webOn: "always",
    webOff: "never",
    research: "Deep research",
    you: "You",
    assistant: "Answer",
    thinking: "Searching the documents…",
    writing: "Writing the answer…",
    answerReady: "Answer ready",
    stopped: "Stopped.",
    error: "Error {status}: {detail}",
    networkError: "The server could not be reached: {detail}",
    streamEnded: "the answer stream ended before the answer was complete; ask again",
    requestId: "request id {id}",
    confidence: "Confidence: {level}",
    level_high: "high",
    level_medium: "medium",
    level_low: "low",
    route_answer: "Answered from your documents",
    route_clarify: "Needs clarification",
    route_web_fallback: "Answered from the web",
    route_not_in_documents: "Not in your documents",
    clarifyHint: "Which one do you mean? Pick one to add it to your question:",
    clarifyPick: "I mean “{title}”",
    sources: "Sources",
    related: "Related documents (not cited)",
    sourceN: "Source {n}: {title}",
    closePanel: "Close the source panel",
    headingPath: "Section",
    place: "Where in the file",
    inContext: "In the document",
    placePage: "p. {n}",
    placePages: "pp. {a}–{b}",
    placeSlide: "slide {n}",
    placeSlides: "slides {a}–{b}",
    placeSheet: "sheet {n}",
    placeSheets: "sheets {a}–{b}",
    placeRow: "row {n}",
    placeRows: "rows {a}–{b}",
    placeChapter: "ch. {n}",
    placeChapters: "chs. {a}–{b}",
    placeSeparator: ", ",
    snippet: "Passage",
    document: "Document",
    openDocument: "Open the document record",
    documentMeta: "{chunks} chunks · updated {updated}",
    documentGone: "The document no longer exists.",
    webPage: "Web page",
    fetchedAt: "fetched {when} via {provider}",
    why: "Why this source",
    whyHint: "The retrieval features that ranked this passage.",
    contributions: "Contribution to the rerank score",
    notFound: "not found by this search",
    stale: "Changed since the answer",
    stale_deleted: "Document deleted since the answer",
    staleHint: "This passage is no longer in the document: the answer was based on an older version.",
    deleted: "Deleted",
    deletedTitle: "Deleted document",
    deletedHint: "The document was deleted, and this passage and its title were erased with it. The answer was written from it.",
    cited: "Cited in the answer",
    notCited: "Not cited in the answer",
    web_badge: "web",
    feat_final_score: "Final score",
    feat_rerank_score: "Rerank score",
    feat_similarity: "Vector similarity",
    feat_keyword_coverage: "Keyword coverage",
    feat_rrf_score: "Fused (RRF) score",
    feat_vector_rank: "Vector rank",
    feat_full_text_rank: "Full-text rank",
    feat_full_text_score: "Full-text score",
    feat_seed_score: "Seed score",
    untitled: "(untitled)",
    researchPlan: "Research plan",
    researchSearching: "searching “{query}”",
    researchEvidence: "{pool} passages found, {relevant} relevant",
    researchSufficient: "enough evidence",
    researchInsufficient: "looking further: {missing}",
    researchDone: "done ({pool} passages)",
    researchWaiting: "waiting",
    researchWriting: "Writing the report…",
    researchPartial: "Partial report: {reasons}",
  },
  zh: {
    skip: "跳到输入框",
    menu: "会话列表",
    newChat: "新对话",
    conversations: "会话",
    noConversations: "还没有会话。",
    messages: "消息",
    language: "English",
    languageLabel: "Switch to English",
    signOut: "退出登录",
    signIn: "登录",
    signInTitle: "登录后即可向文档提问",
    email: "邮箱",
    password: "密码",
    signingIn: "正在登录…",
    signInFailed: "登录失败：{detail}",
    signInUnconfigured: "服务器启用了 Supabase 登录，但没有提供 anon key（SUPABASE_ANON_KEY）。",
    sessionExpired: "登录已过期，请重新登录。",
    welcome: "向你的文档提问",
    welcomeHint: "回答以 [n] 标注出处：点开即可查看原文段落以及它被选中的原因。",
    library: "文档库中共有 {count} 篇文档",
    tryAsking: "试试这样问",
    placeholder: "输入问题…（Enter 发送，Shift+Enter 换行）",
    messageLabel: "你的问题",
    send: "发送",
    stop: "停止",
    tooLong: "{count} / {max} 字：服务器最多接受 {max} 字",
    web: "网络搜索",
    webAuto: "需要时",
    webOn: "总是",
    webOff: "从不",
    research: "深度研究",
    you: "你",
    assistant: "回答",
    thinking: "正在检索文档…",
    writing: "正在生成回答…",
    answerReady: "回答已完成",
    stopped: "已停止。",
    error: "错误 {status}：{detail}",
    networkError: "无法连接服务器：{detail}",
    streamEnded: "回答尚未完成，连接就中断了；请重新提问",
    requestId: "请求编号 {id}",
    confidence: "置信度：{level}",
    level_high: "高",
    level_medium: "中",
    level_low: "低",
    route_answer: "依据文档回答",
    route_clarify: "需要澄清",
    route_web_fallback: "依据网络搜索回答",
    route_not_in_documents: "文档中没有答案",
    clarifyHint: "你指的是哪一个？点选后会补充到问题里：",
    clarifyPick: "我指的是《{title}》",
    sources: "来源",
    related: "相关文档（未引用）",
    sourceN: "来源 {n}：{title}",
    closePanel: "关闭来源面板",
    headingPath: "章节",
    place: "在文件中的位置",
    inContext: "在文档中",
    placePage: "第 {n} 页",
    placePages: "第 {a}–{b} 页",
    placeSlide: "第 {n} 张幻灯片",
    placeSlides: "第 {a}–{b} 张幻灯片",
    placeSheet: "工作表 {n}",
    placeSheets: "工作表 {a}–{b}",
    placeRow: "第 {n} 行",
    placeRows: "第 {a}–{b} 行",
    placeChapter: "第 {n} 章",
    placeChapters: "第 {a}–{b} 章",
    placeSeparator: "，",
    snippet: "原文段落",
    document: "文档",
    openDocument: "打开文档记录",
    documentMeta: "{chunks} 个分块 · 更新于 {updated}",
    documentGone: "该文档已不存在。",
    webPage: "网页",
    fetchedAt: "{when} 通过 {provider} 获取",
    why: "为什么是这个来源",
    whyHint: "决定这段文字排名的检索特征。",
    contributions: "对重排得分的贡献",
    notFound: "本次检索未命中",
    stale: "回答之后已修改",
    stale_deleted: "回答之后文档已删除",
    staleHint: "这段文字已不在文档中：回答依据的是旧版本。",
    deleted: "已删除",
    deletedTitle: "已删除的文档",
    deletedHint: "该文档已被删除，这段文字和它的标题也已一并抹去；回答是依据它写成的。",
    cited: "回答中引用了它",
    notCited: "回答中未引用",
    web_badge: "网页",
    feat_final_score: "最终得分",
    feat_rerank_score: "重排得分",
    feat_similarity: "向量相似度",
    feat_keyword_coverage: "关键词覆盖率",
    feat_rrf_score: "融合（RRF）得分",
    feat_vector_rank: "向量检索排名",
    feat_full_text_rank: "全文检索排名",
    feat_full_text_score: "全文检索得分",
    feat_seed_score: "种子得分",
    untitled: "（无标题）",
    researchPlan: "研究计划",
    researchSearching: "正在搜索“{query}”",
    researchEvidence: "找到 {pool} 段，其中 {relevant} 段相关",
    researchSufficient: "证据充分",
    researchInsufficient: "继续查找：{missing}",
    researchDone: "完成（{pool} 段）",
    researchWaiting: "等待中",
    researchWriting: "正在撰写报告…",
    researchPartial: "报告不完整：{reasons}",
  },
};

const STORAGE_KEY = "pgrag.lang";
let current = initialLanguage();

function initialLanguage() {
  const saved = localStorage.getItem(STORAGE_KEY);
  if (saved in STRINGS) return saved;
  // The first of the browser's languages we speak wins ("en-GB, zh-CN" is English).
  const preferred = navigator.languages?.length ? navigator.languages : [navigator.language || "en"];
  for (const tag of preferred) {
    const code = tag.toLowerCase();
    if (code.startsWith("zh")) return "zh";
    if (code.startsWith("en")) return "en";
  }
  return "en";
}

export function lang() {
  return current;
}

export function setLang(value) {
  current = value in STRINGS ? value : "en";
  localStorage.setItem(STORAGE_KEY, current);
  applyStatic();
}

/** The text for `key` in the current language, with {name} placeholders filled from `vars`. */
export function t(key, vars = {}) {
  const text = STRINGS[current][key] ?? STRINGS.en[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (_, name) => (name in vars ? String(vars[name]) : `{${name}}`));
}

/** Translate the static page: data-i18n (text), data-i18n-placeholder, data-i18n-label (aria-label). */
export function applyStatic(root = document) {
  document.documentElement.lang = current === "zh" ? "zh-CN" : "en";
  for (const el of root.querySelectorAll("[data-i18n]")) el.textContent = t(el.dataset.i18n);
  for (const el of root.querySelectorAll("[data-i18n-placeholder]")) el.placeholder = t(el.dataset.i18nPlaceholder);
  for (const el of root.querySelectorAll("[data-i18n-label]")) el.setAttribute("aria-label", t(el.dataset.i18nLabel));
  for (const el of root.querySelectorAll("[data-i18n-title]")) el.title = t(el.dataset.i18nTitle);
}

export function formatDate(value) {
  if (!value) return "";
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return String(value);
  return new Intl.DateTimeFormat(current === "zh" ? "zh-CN" : "en", { dateStyle: "medium", timeStyle: "short" }).format(date);
}
