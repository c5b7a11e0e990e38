"""Where the corpus's people live: names, cities, mail providers and language per country.

Names are romanized for email addresses; Japanese, Chinese and Korean people also have a native-script name, which
chat and forms display (the way such text reaches a tool result).
"""

from __future__ import annotations

import random
import unicodedata
from dataclasses import dataclass


@dataclass(frozen=True)
class Locale:
    country: str
    language: str
    first_names: tuple[str, ...]
    last_names: tuple[str, ...]
    cities: tuple[str, ...]
    mail_domains: tuple[str, ...]
    native_names: tuple[str, ...] = ()


def _locale(country: str, language: str, first: str, last: str, cities: str, domains: str, native: str = "") -> Locale:
    return Locale(
        country,
        language,
        tuple(first.split()),
        tuple(n.replace("_", " ") for n in last.split()),
        tuple(c.replace("_", " ") for c in cities.split()),
        tuple(domains.split()),
        tuple(native.split()),
    )


LOCALES: dict[str, Locale] = {
    loc.country: loc
    for loc in (
        _locale(
            "US",
            "en",
            "Emily Jacob Olivia Ethan Madison Tyler Hannah Brandon Ashley Kevin",
            "Johnson Williams Brown Garcia Miller Davis Rodriguez Martinez Patel Nguyen",
            "Houston Chicago Denver Seattle Atlanta Boston Phoenix Austin",
            "gmail.com yahoo.com outlook.com comcast.net icloud.com att.net",
        ),
        _locale(
            "CA",
            "en",
            "Liam Chloe Noah Avery Logan Sophie Owen Zoe",
            "Tremblay Roy Gagnon MacDonald Wong Singh Leblanc",
            "Toronto Montreal Vancouver Calgary Ottawa Halifax",
            "gmail.com rogers.com shaw.ca videotron.ca sympatico.ca",
        ),
        _locale(
            "GB",
            "en",
            "Oliver Amelia Harry Isla George Poppy Jack Freya",
            "Smith Jones Taylor O'Brien Evans Hughes Khan",
            "Manchester Leeds Bristol Glasgow Cardiff Liverpool",
            "btinternet.com sky.com gmail.com hotmail.co.uk",
        ),
        _locale(
            "IE",
            "en",
            "Aoife Conor Ciara Sean Niamh Cian",
            "O'Connor Murphy Kelly O'Sullivan Walsh Byrne",
            "Dublin Cork Galway Limerick",
            "eircom.net gmail.com hotmail.com",
        ),
        _locale(
            "AU",
            "en",
            "Charlotte Jack Mia Lachlan Ruby Cooper",
            "Wilson Thompson Anderson White Martin Kelly",
            "Sydney Melbourne Brisbane Perth Adelaide",
            "bigpond.com optusnet.com.au gmail.com",
        ),
        _locale(
            "IN",
            "en",
            "Aarav Priya Rohan Ananya Vikram Kavya Arjun Isha",
            "Sharma Patel Iyer Reddy Gupta Nair Singh",
            "Mumbai Bengaluru Pune Chennai Hyderabad Delhi",
            "gmail.com rediffmail.com yahoo.co.in",
        ),
        _locale(
            "SG",
            "en",
            "Wei Jia Hui Darren Shu Ting",
            "Tan Lim Lee Ng Goh",
            "Singapore",
            "singnet.com.sg gmail.com starhub.net.sg",
        ),
        _locale(
            "ZA",
            "en",
            "Thabo Lerato Sipho Naledi Pieter Anke",
            "Nkosi Dlamini van_der_Merwe Botha Naidoo",
            "Johannesburg Cape_Town Durban Pretoria",
            "webmail.co.za mweb.co.za gmail.com",
        ),
        _locale(
            "DE",
            "de",
            "Lukas Anna Jonas Lena Felix Sophie Maximilian Marie Jürgen Sabine",
            "Müller Schmidt Schneider Fischer Weber Wagner Becker Hoffmann Schäfer Köhler",
            "Berlin Hamburg München Köln Frankfurt Stuttgart Leipzig Dresden",
            "web.de gmx.de t-online.de gmail.com posteo.de freenet.de",
        ),
        _locale(
            "AT",
            "de",
            "Florian Katharina Tobias Julia Stefan",
            "Gruber Huber Bauer Wagner Pichler Steiner",
            "Wien Graz Linz Salzburg Innsbruck",
            "gmx.at aon.at chello.at gmail.com",
        ),
        _locale(
            "CH",
            "de",
            "Luca Mia Noah Lea Nico Laura",
            "Meier Keller Brunner Zürcher Frei Baumann",
            "Zürich Basel Bern Luzern Winterthur",
            "bluewin.ch gmx.ch sunrise.ch",
        ),
        _locale(
            "FR",
            "fr",
            "Camille Léa Hugo Louis Chloé Manon Théo Jade Étienne Inès",
            "Martin Bernard Dubois Thomas Robert Petit Durand Lefèvre Moreau Girard",
            "Paris Lyon Marseille Toulouse Nantes Lille Bordeaux Strasbourg",
            "orange.fr free.fr laposte.net sfr.fr wanadoo.fr gmail.com",
        ),
        _locale(
            "BE",
            "fr",
            "Lucas Emma Arthur Louise Noah Elise",
            "Peeters Janssens Maes Dupont Lambert D'Hondt",
            "Bruxelles Liège Namur Anvers Gand",
            "skynet.be telenet.be proximus.be",
        ),
        _locale(
            "ES",
            "es",
            "Lucía Hugo Martina Pablo Sofía Álvaro Carmen Javier",
            "García Fernández López Martínez Sánchez Pérez",
            "Madrid Barcelona Valencia Sevilla Bilbao Zaragoza",
            "gmail.com hotmail.es telefonica.net yahoo.es",
        ),
        _locale(
            "MX",
            "es",
            "Santiago Valentina Diego Ximena Mateo Regina",
            "Hernández González Ramírez Torres Flores Cruz",
            "Guadalajara Monterrey Puebla Mérida Querétaro",
            "prodigy.net.mx gmail.com hotmail.com",
        ),
        _locale(
            "AR",
            "es",
            "Martín Florencia Joaquín Camila Tomás Agustina",
            "González Rodríguez Gómez Díaz Romero Sosa",
            "Buenos_Aires Córdoba Rosario Mendoza",
            "fibertel.com.ar gmail.com yahoo.com.ar",
        ),
        _locale(
            "IT",
            "it",
            "Giulia Alessandro Francesca Lorenzo Chiara Matteo",
            "Rossi Russo Ferrari Esposito Bianchi D'Angelo",
            "Milano Roma Torino Napoli Bologna Firenze",
            "libero.it virgilio.it tim.it gmail.com",
        ),
        _locale(
            "NL",
            "nl",
            "Daan Sanne Bram Femke Sem Lotte",
            "de_Jong Jansen de_Vries van_den_Berg Bakker Visser",
            "Amsterdam Rotterdam Utrecht Eindhoven Groningen",
            "ziggo.nl kpnmail.nl xs4all.nl gmail.com",
        ),
        _locale(
            "PL",
            "pl",
            "Jakub Zuzanna Kacper Julia Szymon Maja",
            "Nowak Kowalski Wiśniewski Wójcik Kamiński",
            "Warszawa Kraków Gdańsk Wrocław Poznań",
            "wp.pl onet.pl interia.pl gmail.com",
        ),
        _locale(
            "SE",
            "sv",
            "Erik Astrid Oskar Elsa Hugo Maja",
            "Andersson Johansson Karlsson Nilsson Lindqvist",
            "Stockholm Göteborg Malmö Uppsala",
            "telia.com bredband.net gmail.com",
        ),
        _locale(
            "PT",
            "pt",
            "João Beatriz Rodrigo Inês Tiago Mariana",
            "Silva Santos Ferreira Pereira Costa Oliveira",
            "Lisboa Porto Braga Coimbra Faro",
            "sapo.pt gmail.com netcabo.pt",
        ),
        _locale(
            "BR",
            "pt",
            "Lucas Ana Gabriel Júlia Mateus Larissa Rafael Fernanda",
            "Silva Souza Oliveira Lima Carvalho Rocha Almeida",
            "São_Paulo Rio_de_Janeiro Belo_Horizonte Curitiba Recife",
            "uol.com.br bol.com.br terra.com.br gmail.com",
        ),
        _locale(
            "JP",
            "ja",
            "Yui Haruto Sakura Ren Aoi Sota Hina Kaito",
            "Tanaka Suzuki Takahashi Watanabe Ito Yamamoto",
            "Tokyo Osaka Nagoya Sapporo Fukuoka Yokohama",
            "docomo.ne.jp ezweb.ne.jp yahoo.co.jp gmail.com",
            "田中結衣 鈴木陽翔 高橋さくら 渡辺蓮 伊藤葵 山本蒼太",
        ),
        _locale(
            "CN",
            "zh",
            "Wei Fang Jing Lei Min Hao Xin Yan",
            "Wang Li Zhang Liu Chen Yang Zhao",
            "Beijing Shanghai Shenzhen Guangzhou Hangzhou Chengdu",
            "qq.com 163.com 126.com sina.com",
            "王伟 李娜 张敏 刘洋 陈静 杨磊",
        ),
        _locale(
            "KR",
            "ko",
            "Minjun Seoyeon Jihoon Jiwoo Hyunwoo Soyeon",
            "Kim Lee Park Choi Jung Kang",
            "Seoul Busan Incheon Daegu",
            "naver.com daum.net hanmail.net",
            "김민준 이서연 박지훈 최지우 정현우",
        ),
    )
}

LANGUAGE_COUNTRIES: dict[str, tuple[str, ...]] = {}
for _loc in LOCALES.values():
    LANGUAGE_COUNTRIES[_loc.language] = (*LANGUAGE_COUNTRIES.get(_loc.language, ()), _loc.country)


@dataclass(frozen=True)
class Person:
    first: str
    last: str
    locale: Locale
    native: str = ""

    @property
    def name(self) -> str:
        return self.native or f"{self.first} {self.last}"

    @property
    def ascii_first(self) -> str:
        return ascii_fold(self.first)

    @property
    def ascii_last(self) -> str:
        return ascii_fold(self.last)


def ascii_fold(text: str) -> str:
    """Lowercase ASCII for an address's local part: accents dropped, spaces removed, an apostrophe kept."""
    text = text.replace("ß", "ss").replace("ł", "l").replace("ø", "o")
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return folded.replace(" ", "").lower()


def person(r: random.Random, country: str | None = None) -> Person:
    locale = LOCALES[country] if country else r.choice(list(LOCALES.values()))
    native = r.choice(locale.native_names) if locale.native_names and r.random() < 0.6 else ""
    return Person(r.choice(locale.first_names), r.choice(locale.last_names), locale, native)


def speaker_of(r: random.Random, language: str) -> Person:
    return person(r, r.choice(LANGUAGE_COUNTRIES[language]))
