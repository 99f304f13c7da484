"""Word lists and time expressions the extraction rules share, and the importance table.

Lists are written as compact text blocks (words split on whitespace, phrases on "|")
so that they stay readable and easy to extend.
"""

from __future__ import annotations

import re

__all__ = [
    "DATE_RE",
    "DEMONYMS",
    "EMPHASIS_BOOST",
    "FREQUENCY_RE",
    "FUTURE_TIME_RE",
    "IMPORTANCE",
    "IRREGULAR_PAST",
    "MODALS",
    "ONE_OFF_RE",
    "PAST_PARTICIPLES",
    "PAST_TIME_RE",
    "PERSISTENT_RE",
    "PLACES_ZH",
    "PROFESSIONS_EN",
    "RELATIONS_EN",
    "RELATIONS_ZH",
    "SMALL_TALK",
    "SURNAMES_ZH",
    "cn_number",
    "importance",
    "one_off",
    "phrases",
    "words",
]


def words(block: str) -> frozenset[str]:
    """A word list written as whitespace-separated words."""
    return frozenset(block.split())


def phrases(block: str) -> frozenset[str]:
    """A phrase list written as "|"-separated phrases over as many lines as needed."""
    return frozenset(p.strip() for p in re.split(r"[|\n]", block) if p.strip())


# ------------------------------------------------------------------ importance

# Importance by what a fact is (0..1). The spread is what matters for recall
# ranking: identity and health outrank tastes; hard constraints outrank habits.
IMPORTANCE: dict[str, float] = {
    "name": 0.9,
    "allergy": 0.9,
    "preferred_name": 0.8,
    "diet": 0.8,
    "employer": 0.7,
    "job_title": 0.7,
    "lives_in": 0.7,
    "decision": 0.7,
    "constraint": 0.7,
    "instruction": 0.7,
    "commitment": 0.7,
    "explicit": 0.7,  # asked to be remembered: the user thinks it matters
    "field": 0.6,
    "work_city": 0.6,
    "hometown": 0.6,
    "nationality": 0.6,
    "age": 0.6,
    "attribute": 0.6,
    "setting": 0.6,
    "opinion": 0.6,
    "routine": 0.6,
    "habit": 0.6,
    "identity": 0.6,
    "event": 0.5,
    # A statement no rule classifies, kept as said: the middle of the scale, as the LLM
    # extractor gives a fact that comes without an importance.
    "statement": 0.5,
}
# Emphasis ("really", "一定", "never"…) raises importance by this much, capped at 1.
EMPHASIS_BOOST = 0.1
_EMPHASIS_RE = re.compile(
    r"\b(?:very|really|absolutely|extremely|totally|must|always|never|important|remember"
    r"|seriously|definitely|strongly|love|hate)\b"
    r"|非常|特别|一定|务必|千万|绝对|最(?!后|近|终|初)|永远|从不|重要|记住|记得|必须|超级|极其|讨厌|热爱",
    re.IGNORECASE,
)


def importance(base: str, clause: str) -> float:
    """The importance of a fact of type ``base`` (a key of :data:`IMPORTANCE`)."""
    value = IMPORTANCE[base]
    if _EMPHASIS_RE.search(clause):
        value += EMPHASIS_BOOST
    return round(min(1.0, max(0.0, value)), 2)


# ------------------------------------------------------------------ small talk

SMALL_TALK = phrases(
    """
    hi|hello|hey|hiya|yo|howdy|hello there|hi there|hey there|thanks|thank you|thankyou|thx|ty
    tysm|thanks a lot|thank you so much|thank you very much|thanks again|many thanks
    much appreciated|appreciate it|cheers|ok|okay|k|kk|ok thanks|okay thanks|sure|sure thing
    yes|yeah|yep|yup|no|nope|nah|fine|great|cool|nice|awesome|perfect|amazing|excellent
    wonderful|interesting|got it|gotcha|i see|understood|noted|will do|done|alright|all right
    sounds good|good|good to know|makes sense|fair enough|of course|right|exactly|indeed
    agreed|same|me too|good morning|good night|good evening|good afternoon|morning|night|bye
    goodbye|bye bye|see you|see ya|see you later|later|lol|lmao|haha|hehe|np|no problem
    no worries|you're welcome|youre welcome|welcome|sorry|my bad|oops|yay|wow|oh|ah|um|uh|hmm
    hm|how are you|how's it going|what's up|whats up|sup|nice to meet you|that's great
    that's all|that is all|great job|well done|good job|don't worry|never mind|nevermind|please
    你好|您好|你好啊|嗨|哈喽|哈啰|嘿|谢谢|谢谢你|谢谢您|谢啦|谢了|多谢|感谢|非常感谢|太感谢了
    好的|好|好吧|好嘞|好滴|好呀|好啊|行|行吧|行的|可以|可以的|没问题|嗯|嗯呢|嗯啊|嗯哼|哦|噢|喔
    啊|哇|呃|诶|欸|哈|哈哈|呵呵|嘿嘿|嘻嘻|是的|是|对|对的|对啊|没错|明白|明白了|知道了|收到
    了解|了解了|懂了|好的谢谢|原来如此|这样啊|再见|拜拜|回见|晚安|早安|早|早上好|晚上好|下午好
    中午好|不客气|别客气|不用谢|没关系|没事|别担心|辛苦了|太好了|不错|厉害|牛|棒|好棒|真棒
    在吗|在不在|你在吗|抱歉|不好意思|对不起
    """
)

# ------------------------------------------------------------------ English grammar

MODALS = words("can could will would shall should must might may")
IRREGULAR_PAST = words(
    """was were went had did made got took chose came saw said found left began bought brought
    thought told felt kept met ran sent spent wrote became forgot gave grew knew lost paid put
    read set sold sat slept spoke stood taught understood won ate drove flew fell quit built
    caught drew heard held hurt led lent let meant rode rose shot shut sang sank swam swore
    threw woke wore agreed freed guaranteed broke drank bit blew dug fed fought fled forgave
    froze hid hung knelt laid leapt lit rang shook shone slid spun split spread sprang stole
    stuck stung struck swept swung tore wept withdrew wound bent bled bred dealt dreamt learnt
    burnt spilt overslept overcame undertook mistook began became"""
)
# Participles that differ from the simple past: "I've been to Japan", "we have gone".
PAST_PARTICIPLES = IRREGULAR_PAST | words(
    """been gone done seen taken given eaten written driven flown known grown begun broken
    chosen forgotten gotten hidden ridden risen spoken stolen sworn thrown woken worn shown
    fallen drawn sung swum run won come become bitten blown drunk frozen mistaken shaken
    torn withdrawn overcome undertaken"""
)

# ------------------------------------------------------------------ people and places

PROFESSIONS_EN = words(
    """engineer developer programmer coder designer teacher professor lecturer student doctor
    nurse lawyer attorney accountant manager director consultant analyst scientist researcher
    writer author journalist editor artist musician chef cook pilot driver architect dentist
    pharmacist physician surgeon therapist psychologist technician mechanic electrician plumber
    carpenter farmer entrepreneur founder ceo cto cfo coo intern freelancer photographer marketer
    salesperson recruiter officer soldier firefighter librarian economist banker trader investor
    administrator admin coordinator specialist assistant secretary clerk cashier waiter waitress
    barista bartender tutor coach trainer instructor vet veterinarian pm postdoc retiree
    translator interpreter paramedic optometrist policeman policewoman sre devops tester qa
    lead vp president principal janitor cleaner baker butcher tailor broker realtor agent actor
    actress singer dancer composer producer animator illustrator streamer youtuber blogger
    podcaster owner housewife homemaker caregiver counselor counsellor surveyor statistician
    mathematician physicist chemist biologist geologist historian philosopher sociologist
    linguist astronaut diplomat judge paralegal auditor actuary underwriter"""
)
DEMONYMS = words(
    """american british english french german japanese korean indian canadian australian spanish
    italian russian brazilian mexican chinese dutch swedish norwegian danish finnish polish irish
    scottish welsh swiss austrian belgian portuguese greek turkish egyptian israeli iranian
    pakistani bangladeshi vietnamese thai filipino indonesian malaysian singaporean taiwanese
    argentinian argentine chilean colombian peruvian nigerian kenyan ukrainian czech hungarian
    romanian"""
)
# Places a Chinese "在X工作" names as a location rather than an employer.
PLACES_ZH = words(
    """北京 上海 广州 深圳 杭州 南京 成都 武汉 西安 重庆 天津 苏州 长沙 郑州 青岛 厦门 大连
    宁波 合肥 济南 沈阳 哈尔滨 昆明 福州 香港 澳门 台北 台湾 东京 大阪 首尔 纽约 伦敦 巴黎
    柏林 新加坡 硅谷 旧金山 洛杉矶 西雅图 波士顿 多伦多 温哥华 悉尼 墨尔本 美国 中国 日本
    英国 德国 法国 加拿大 澳大利亚 韩国 国外 海外 老家 家里 家 珠海 东莞 佛山 无锡 常州 南昌
    贵阳 南宁 太原 石家庄 兰州 乌鲁木齐 拉萨 呼和浩特 银川 西宁 海口 三亚 长春 吉林 烟台 威海
    温州 绍兴 嘉兴 金华 台州 泉州 漳州 扬州 徐州"""
)
# The people and animals a user speaks of as theirs ("my uncle…", "我舅舅…"): what they
# do is about someone else, so it fills none of the user's own slots.
RELATIONS_EN = words(
    """wife husband partner spouse son sons daughter daughters kid kids child children baby
    mom mum mother dad father parents brother brothers sister sisters sibling siblings
    boyfriend girlfriend fiance fiancee fiancé fiancée ex boss manager supervisor cat cats dog
    dogs pet pets puppy kitten friend friends roommate flatmate housemate team company
    colleague colleagues coworker coworkers co-worker co-workers family grandma grandpa
    grandmother grandfather grandparents grandson granddaughter grandkids grandchildren uncle
    aunt auntie cousin cousins niece nephew stepmom stepdad stepmother stepfather stepson
    stepdaughter stepbrother stepsister in-laws mother-in-law father-in-law sister-in-law
    brother-in-law son-in-law daughter-in-law neighbor neighbour neighbors neighbours landlord
    landlady mentor classmate classmates teammate teammates twin bestie doctor dentist therapist
    teacher coach"""
)
RELATIONS_ZH = words(
    """老婆 老公 妻子 丈夫 太太 爱人 媳妇 儿子 女儿 闺女 孩子 小孩 宝宝 爸爸 妈妈 爸 妈 父亲
    母亲 爸妈 父母 哥哥 姐姐 弟弟 妹妹 哥 姐 弟 妹 男朋友 女朋友 男友 女友 对象 未婚妻
    未婚夫 前任 老板 领导 上司 经理 主管 同事 室友 舍友 同学 老师 导师 朋友 好朋友 闺蜜 兄弟
    邻居 猫 狗 猫咪 狗狗 宠物 团队 公司 家人 爷爷 奶奶 外公 外婆 姥姥 姥爷 舅舅 舅妈 姑姑
    姑父 叔叔 婶婶 阿姨 姨妈 姨夫 伯伯 伯父 伯母 表哥 表姐 表弟 表妹 堂哥 堂姐 堂弟 堂妹
    侄子 侄女 外甥 外甥女 孙子 孙女 外孙 外孙女 岳父 岳母 公公 婆婆 丈人 丈母娘 嫂子 姐夫
    弟媳 妹夫 师傅 师父 徒弟 客户 合伙人 搭档 医生"""
)

# The most common Chinese surnames: "我是张伟" names the user, "我是学生" does not.
SURNAMES_ZH = frozenset(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈姚卢姜崔"
    "钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤欧"
)

# ------------------------------------------------------------------ time

_WEEKDAY = r"monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_MONTH = (
    r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
_MONTH_FULL = (
    r"january|february|march|april|may|june|july|august|september|october|november|december"
)
_SEASON = r"spring|summer|autumn|fall|winter"
_HOLIDAY = (
    r"christmas|easter|thanksgiving|halloween|new\s+year(?:'s)?(?:\s+(?:eve|day))?|hanukkah"
    r"|diwali|ramadan|eid|labor\s+day|memorial\s+day|spring\s+break|the\s+holidays"
)
_EN_COUNT = (
    r"a|an|one|two|three|four|five|six|seven|eight|nine|ten|a\s+few|a\s+couple\s+of|several|\d+"
)
_ZH_DAY = r"[一二三四五六日天]"
# A point in time: "next Friday", "March 3rd", "at 9am", "下周五", "3月15日", "晚上8点".
DATE_RE = re.compile(
    rf"\b(?:today|tonight|tomorrow|yesterday|this\s+(?:past\s+)?(?:morning|afternoon|evening|week"
    rf"|weekend|month|year|quarter|{_SEASON}|{_WEEKDAY})|(?:next|last|past)\s+(?:week|month|year"
    rf"|weekend|quarter|night|{_SEASON}|{_WEEKDAY}|{_MONTH_FULL})|on\s+(?:{_WEEKDAY})|{_WEEKDAY}"
    rf"|(?:in|during|over|since|until|by)\s+(?:(?:early|late|mid)[\s-]+)?(?:{_MONTH_FULL}|{_SEASON}"
    rf"|(?:19|20)\d{{2}})|(?:on|over|at|for|during|before|after|until|by)\s+(?:the\s+)?(?:{_HOLIDAY})"
    r"|earlier\s+today|the\s+other\s+day"
    r"|in\s+(?:\d+|a|an|two|three|a\s+few)\s+(?:days?|weeks?|months?|hours?|years?)"
    rf"|(?:{_MONTH})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTH})"
    r"|\d{4}-\d{1,2}-\d{1,2}|\d{1,2}/\d{1,2}(?:/\d{2,4})?"
    r"|at\s+\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.)?|\d{1,2}(?::\d{2})?\s*(?:am|pm)"
    r"|noon|midnight|by\s+(?:end\s+of\s+\w+|eod|eow)|end\s+of\s+(?:the\s+)?(?:day|week|month"
    rf"|year|quarter)|(?:{_EN_COUNT})\s+(?:days?|weeks?|months?|years?)\s+ago)\b"
    rf"|今天|今晚|今早|明天|明早|明晚|后天|大后天|昨天|昨晚|昨早|前天|前晚|今年|明年|去年|前年|后年"
    rf"|下周{_ZH_DAY}?|下周末|春节|国庆|中秋|元旦|端午|清明节?|寒假|暑假|圣诞节?"
    r"|(?:\d+|[一二三四五六七八九十两几半]+)个?(?:天|周|星期|礼拜|月|年)(?:前|以前|之前|后|以后|之后)"
    rf"|下个?(?:星期|礼拜){_ZH_DAY}?|这周{_ZH_DAY}?|这周末|这个?(?:星期|礼拜){_ZH_DAY}|本周{_ZH_DAY}?"
    rf"|上周{_ZH_DAY}?|上个?(?:星期|礼拜){_ZH_DAY}?|下个月|上个月|这个月|本月|月底|月初|年底|年初"
    rf"|周末|(?:周|星期|礼拜){_ZH_DAY}|\d{{1,2}}月\d{{1,2}}[日号]|\d{{1,2}}[日号](?!子)"
    r"|[一二三四五六七八九十]+月[一二三四五六七八九十]+[日号]|\d{1,2}[点:：]\d{0,2}"
    r"|[一二三四五六七八九十两]+点(?:半|钟)?|(?:早上|上午|中午|下午|晚上|凌晨|傍晚)\d*点?"
    r"|\d+天后|\d+小时后|过几天|下次|\d{4}年",
    re.IGNORECASE,
)
# A repetition: "every Monday", "daily", "每天", "每周三".
FREQUENCY_RE = re.compile(
    rf"\b(?:every\s+(?:day|morning|afternoon|evening|night|week|weekday|weekend|month|year"
    rf"|other\s+day|{_WEEKDAY}|\d+\s+(?:hours?|days?|weeks?|minutes?))"
    r"|each\s+(?:day|morning|evening|night|week|month)|daily|nightly|weekly|monthly|yearly"
    rf"|annually|on\s+(?:(?:{_WEEKDAY})s|weekdays|weekends)"
    r"|twice\s+a\s+(?:day|week|month)|once\s+a\s+(?:day|week|month))\b"
    # "two cups a day", "three times per week"; "in a day" and "a day ago" are no rhythm
    r"|(?<!\bin\s)(?<!\bfor\s)(?<!\bwithin\s)\b(?:a|per)\s+(?:day|week|month)\b"
    r"(?!\s+(?:ago|or\b|later|before|after|off|trip))"
    rf"|每天|每日|每晚|每早|每周{_ZH_DAY}?|每周末|每个?(?:星期|礼拜){_ZH_DAY}?|每个?月|每年|每隔"
    r"|每逢|每小时|每\d+(?:天|小时|分钟|周)|工作日|天天|每个周末|每个工作日",
    re.IGNORECASE,
)

# Times that place what a clause says before the turn, or after it. Times that straddle
# the turn ("this weekend", "周末", "今年") are neither: the verb's tense decides those.
PAST_TIME_RE = re.compile(
    rf"\b(?:yesterday|last\s+(?:night|week|weekend|month|year|quarter|time|{_SEASON}|{_WEEKDAY}"
    rf"|{_MONTH_FULL})|(?:{_EN_COUNT})\s+(?:days?|weeks?|months?|years?)\s+ago|earlier\s+today"
    r"|the\s+other\s+day|this\s+past\s+\w+|when\s+i\s+was|as\s+a\s+(?:kid|child|teen(?:ager)?)"
    r"|back\s+in)\b"
    r"|昨天|昨晚|昨早|前天|前晚|上周|上个?(?:星期|礼拜|月)|上次|去年|前年|以前|之前|曾经|小时候|当年|那年"
    r"|刚才|(?:\d+|[一二三四五六七八九十两几半]+)个?(?:天|周|星期|礼拜|月|年)(?:前|以前|之前)",
    re.IGNORECASE,
)
FUTURE_TIME_RE = re.compile(
    rf"\b(?:tomorrow|next\s+(?:week|weekend|month|year|quarter|time|{_SEASON}|{_WEEKDAY}"
    rf"|{_MONTH_FULL})|(?:this\s+)?coming\s+\w+|upcoming|soon|later\s+(?:today"
    r"|this\s+\w+)|in\s+(?:\d+|a|an|two|three|a\s+few)\s+(?:days?|weeks?|months?|hours?|years?)"
    r"|\w+\s+(?:days?|weeks?|months?)\s+from\s+now)\b"
    r"|明天|明早|明晚|后天|下周|下个?(?:星期|礼拜|月)|下次|明年|后年|过几天|将来|即将"
    r"|(?:\d+|[一二三四五六七八九十两几半]+)个?(?:天|小时|周|星期|礼拜|月|年)(?:后|以后|之后)",
    re.IGNORECASE,
)

# Markers of a standing wish rather than a request about the current answer.
PERSISTENT_RE = re.compile(
    r"\b(?:always|never|from\s+now\s+on|going\s+forward|in\s+(?:the\s+)?future|from\s+here\s+on"
    r"|every\s+time|whenever|each\s+time|by\s+default|all\s+(?:your\s+|the\s+)?(?:answers|replies"
    r"|responses)|remember\s+to|make\s+sure\s+(?:to|you)|don't\s+ever|do\s+not\s+ever|ever\s+again"
    r"|anymore|any\s+more)\b"
    r"|以后|今后|从现在开始|从现在起|从今以后|往后|每次|总是|永远|一律|始终|默认|一直|别再|不要再"
    r"|所有的?(?:回答|回复)|记得|务必|千万",
    re.IGNORECASE,
)
# Markers of a request about something at hand ("make it shorter", "translate this",
# "用英文再说一遍"): without a PERSISTENT_RE marker, no standing preference.
ONE_OFF_RE = re.compile(
    r"\b(?:this|these|those|below|above|again|the\s+(?:article|text|code|email|message|paragraph"
    r"|following|document|file|page|passage|essay|letter|story|poem)|make\s+it|rewrite\s+it"
    r"|redo\s+it|shorten\s+it)\b"
    r"|再说|再来|再写|重写|一遍|这段|这句|这篇|这个|那个|下面|上面|刚才|以下|这些|翻译",
    re.IGNORECASE,
)


def one_off(clause: str) -> bool:
    """Whether the clause asks about the thing at hand rather than stating a lasting wish."""
    return ONE_OFF_RE.search(clause) is not None and PERSISTENT_RE.search(clause) is None


_CN_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7}
_CN_DIGITS |= {"八": 8, "九": 9}
_CN_UNITS = {"十": 10, "百": 100, "千": 1000, "万": 10000}


def cn_number(text: str) -> int | None:
    """Arabic or Chinese numerals ("500", "五百", "十五", "三百二十") as an int."""
    if text.isdigit():
        return int(text)
    total = section = digit = 0
    for ch in text:
        if ch in _CN_DIGITS:
            digit = _CN_DIGITS[ch]
        elif ch in _CN_UNITS:
            unit = _CN_UNITS[ch]
            if unit == 10000:
                total += (section + digit) * unit
                section = digit = 0
            else:
                section += (digit or 1) * unit
                digit = 0
        else:
            return None
    return total + section + digit
