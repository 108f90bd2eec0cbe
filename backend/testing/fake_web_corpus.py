"""The fake web's built-in pages: a few Chinese and English articles on topics the demo corpus does not
cover, each wrapped in the page furniture real sites have (navigation, breadcrumbs, sidebar, share
buttons, comments, footer), so deep reads exercise the HTML cleaning."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape


@dataclass(frozen=True)
class FakePage:
    site: str  # the fictional domain it is "on" (domain lists match it)
    slug: str
    lang: str
    title: str
    paragraphs: tuple[str, ...]
    published: str = "2024-06-01"
    engines: tuple[str, ...] = ()  # the search engines that find it; (): every web engine

    @property
    def path(self) -> str:
        return f"/pages/{self.site}/{self.slug}"

    @property
    def text(self) -> str:
        return "\n\n".join(self.paragraphs)


_CHROME = {
    "zh": (
        "首页 | 百科 | 新闻 | 图片 | 视频",
        "相关推荐：热门词条排行榜、今日新闻",
        "分享到微信 微博 QQ",
        "网友评论（23）：写得很好！",
        "版权所有 © 2024 示例百科网 京ICP备000000号",
    ),
    "en": (
        "Home | Articles | News | Topics | About",
        "Related: most read this week",
        "Share on X Facebook Email",
        "Comments (12): Great read, thanks!",
        "Copyright © 2024 Example Wiki. All rights reserved.",
    ),
}


def render(page: FakePage) -> str:
    """The page as a site would serve it: the article inside navigation, sidebar, comments and footer."""
    nav, related, share, comments, footer = _CHROME[page.lang]
    body = "".join(f"<p>{escape(p)}</p>" for p in page.paragraphs)
    return (
        f'<!doctype html><html lang="{page.lang}"><head><meta charset="utf-8">'
        f"<title>{escape(page.title)}</title>"
        "<style>body{font-family:sans-serif}</style><script>window.analytics=1</script></head><body>"
        f"<header><div class='logo'>{escape(page.site)}</div><nav>{escape(nav)}</nav></header>"
        f"<div class='breadcrumb'>{escape(page.site)} &gt; {escape(page.title)}</div>"
        f"<aside class='sidebar'><h3>{escape(related)}</h3></aside>"
        f"<article><header><h1>{escape(page.title)}</h1><time>{page.published}</time></header>{body}"
        f"<div class='share-buttons'>{escape(share)}</div></article>"
        f"<section class='comments'>{escape(comments)}</section>"
        f"<form action='/login'><input name='q'><button>Search</button></form>"
        f"<footer>{escape(footer)}</footer></body></html>"
    )


PAGES: tuple[FakePage, ...] = (
    FakePage(
        "baike.example.cn",
        "giant-panda",
        "zh",
        "大熊猫",
        (
            "大熊猫是中国特有的熊科动物，主要栖息在四川、陕西和甘肃三省的山区竹林中，海拔通常在一千五百米到三千米之间。",
            "大熊猫的食物中百分之九十九是竹子，一只成年大熊猫每天要花十个小时以上进食，吃掉十二到三十八公斤竹子。",
            "根据第四次全国大熊猫调查，野生大熊猫数量为一千八百六十四只。二〇一六年，世界自然保护联盟将其受威胁等级从濒危下调为易危。",
            "大熊猫的伪拇指由腕骨特化而成，帮助它们抓握竹竿。幼崽出生时体重只有一百克左右，约为母亲体重的千分之一。",
        ),
    ),
    FakePage(
        "baike.example.cn",
        "longjing-tea",
        "zh",
        "西湖龙井茶",
        (
            "西湖龙井是产于浙江省杭州市西湖风景区一带的绿茶，以色绿、香郁、味甘、形美四绝著称。",
            "龙井茶的炒制讲究手法，传统上有抖、带、挤、甩、挺、拓、扣、抓、压、磨十大手法，一锅茶要炒二十分钟左右。",
            "明前茶指清明节前采摘的嫩芽，产量少而品质高。相传清朝乾隆皇帝下江南时曾在狮峰山下采茶，并封十八棵御茶树。",
        ),
    ),
    FakePage(
        "news.example.cn",
        "chang-e-6",
        "zh",
        "嫦娥六号完成人类首次月球背面采样返回",
        (
            "二〇二四年六月二十五日，嫦娥六号返回器在内蒙古四子王旗着陆场成功着陆，带回了人类首份月球背面样品。",
            "经称重，嫦娥六号共采集月球背面样品一千九百三十五点三克。采样点位于月球背面南极—艾特肯盆地。",
            "此次任务由鹊桥二号中继星提供地月通信支持，历时五十三天，突破了月球逆行轨道设计与控制等关键技术。",
        ),
        published="2024-06-28",
    ),
    FakePage(
        "baike.example.cn",
        "dujiangyan",
        "zh",
        "都江堰水利工程",
        (
            "都江堰位于四川省都江堰市城西，是战国时期秦国蜀郡太守李冰父子于约公元前二五六年主持修建的大型水利工程。",
            "工程由鱼嘴分水堤、飞沙堰溢洪道和宝瓶口进水口三大部分组成，实现了分水、排沙和引水的功能，使成都平原成为天府之国。",
            "二〇〇〇年，都江堰与青城山一起被联合国教科文组织列入世界文化遗产名录，至今仍在发挥灌溉作用。",
        ),
    ),
    FakePage(
        "wiki.example.org",
        "honeybee-waggle-dance",
        "en",
        "The waggle dance of honey bees",
        (
            "The waggle dance is a figure-eight movement that a forager honey bee performs on the comb to"
            " tell her nestmates where she found flowers, water or a new nest site.",
            "The angle of the waggle run relative to vertical encodes the direction of the food source "
            "relative to the sun, and the duration of the run encodes its distance: roughly one second "
            "per kilometre.",
            "Karl von Frisch decoded the dance in the 1940s and shared the 1973 Nobel Prize in Physiology"
            " or Medicine for his work on bee communication.",
        ),
    ),
    FakePage(
        "wiki.example.org",
        "rosetta-stone",
        "en",
        "Rosetta Stone",
        (
            "The Rosetta Stone is a granodiorite stele inscribed with a decree issued in Memphis in 196 "
            "BC on behalf of King Ptolemy V. The decree appears in three scripts: hieroglyphic, Demotic "
            "and Ancient Greek.",
            "French soldiers found the stone in 1799 near the town of Rashid (Rosetta) in the Nile Delta."
            " It has been on public display at the British Museum since 1802.",
            "Because the three texts say nearly the same thing, the stone was the key to deciphering "
            "Egyptian hieroglyphs; Jean-Francois Champollion announced his decipherment in 1822.",
        ),
    ),
    FakePage(
        "travel.example.com",
        "kilimanjaro",
        "en",
        "Climbing Mount Kilimanjaro",
        (
            "Mount Kilimanjaro in Tanzania is the highest mountain in Africa; its summit, Uhuru Peak on "
            "the Kibo cone, stands 5,895 metres above sea level.",
            "Most climbers take six to eight days on routes such as Machame, Lemosho or Marangu. Longer "
            "routes give the body time to acclimatise and raise the summit success rate.",
            "The climb crosses five climate zones, from cultivated farmland and rainforest through heath "
            "and alpine desert to the arctic summit, where glaciers have shrunk by more than 80 percent "
            "since 1912.",
        ),
    ),
    FakePage(
        "food.example.com",
        "sourdough-starter",
        "en",
        "How to make a sourdough starter",
        (
            "A sourdough starter is a culture of wild yeast and lactic acid bacteria kept in a mixture of"
            " flour and water. Mix equal weights of wholemeal flour and water and leave it at room "
            "temperature.",
            "Discard half and feed the starter with fresh flour and water every 24 hours. After five to "
            "ten days it should double in size within four to eight hours of a feeding and smell "
            "pleasantly sour.",
            "Keep a mature starter in the fridge and feed it once a week; take it out a day before baking.",
        ),
    ),
)
