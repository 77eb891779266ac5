"""Word lists and the plan catalogue the generator draws from: castbench's own choices."""

from __future__ import annotations

from typing import NamedTuple

__all__ = [
    "AREA_CODES",
    "BANKS",
    "BROKEN_APNS",
    "CARD_BRANDS",
    "COUNTRIES",
    "DEVICE_MODELS",
    "EMAIL_DOMAINS",
    "FIRST_NAMES",
    "LAST_NAMES",
    "PERSONAS",
    "PLANS",
    "PlanSpec",
]


class PlanSpec(NamedTuple):
    plan_id: str
    name: str
    monthly_price: float
    data_gb: int
    roaming_allowed: bool
    refuel_price_per_gb: float


PLANS = [
    PlanSpec("starter_2", "Starter 2GB", 15.0, 2, False, 6.0),
    PlanSpec("basic_5", "Basic 5GB", 25.0, 5, False, 5.0),
    PlanSpec("senior_8", "Senior 8GB", 30.0, 8, False, 5.0),
    PlanSpec("everyday_15", "Everyday 15GB", 40.0, 15, False, 4.0),
    PlanSpec("student_20", "Student 20GB", 35.0, 20, False, 4.0),
    PlanSpec("traveler_12", "Traveler 12GB", 45.0, 12, True, 4.5),
    PlanSpec("plus_30", "Plus 30GB", 60.0, 30, True, 3.0),
    PlanSpec("max_60", "Max 60GB", 80.0, 60, True, 2.5),
]

FIRST_NAMES = [
    "Amara",
    "Bruno",
    "Chiara",
    "Dmitri",
    "Elena",
    "Farid",
    "Greta",
    "Hugo",
    "Ines",
    "Jonas",
    "Keiko",
    "Lars",
    "Maya",
    "Nikhil",
    "Olga",
    "Pablo",
    "Quinn",
    "Rosa",
    "Samir",
    "Tessa",
    "Umar",
    "Vera",
    "Wes",
    "Ximena",
    "Yusuf",
    "Zara",
    "Aiden",
    "Bianca",
    "Caleb",
    "Delia",
    "Emeka",
    "Fiona",
    "Gideon",
    "Hana",
    "Ivan",
    "Jada",
    "Kofi",
    "Lena",
    "Milo",
    "Nadia",
    "Omar",
    "Priya",
    "Rafael",
    "Sofia",
    "Theo",
    "Uma",
    "Viktor",
    "Willa",
    "Yara",
    "Zeke",
]

LAST_NAMES = [
    "Abara",
    "Becker",
    "Castillo",
    "Dubois",
    "Eriksen",
    "Fontaine",
    "Gallo",
    "Haddad",
    "Ishikawa",
    "Janssen",
    "Kowalski",
    "Lindqvist",
    "Moreau",
    "Nakamura",
    "Okafor",
    "Petrov",
    "Quintero",
    "Rossi",
    "Sandoval",
    "Tanaka",
    "Ueda",
    "Varga",
    "Whitfield",
    "Xu",
    "Yilmaz",
    "Zamora",
    "Adeyemi",
    "Brennan",
    "Chowdhury",
    "Delgado",
    "Esposito",
    "Ferreira",
    "Grant",
    "Holm",
    "Iyer",
    "Jovanovic",
    "Keller",
    "Lopez",
    "Mensah",
    "Novak",
]

EMAIL_DOMAINS = ["example.com", "mail.example.org", "inbox.example.net"]

AREA_CODES = ["206", "312", "415", "503", "617", "702", "720", "512", "404", "919"]

DEVICE_MODELS = [
    "Pixel 8",
    "Pixel 7a",
    "iPhone 15",
    "iPhone 13",
    "Galaxy S23",
    "Galaxy A54",
    "Moto G Power",
    "OnePlus 12",
    "Nokia G42",
    "Xperia 10",
]

COUNTRIES = ["France", "Japan", "Mexico", "Italy", "Canada", "Portugal", "Kenya", "Thailand", "Germany"]

BROKEN_APNS = ["internet.old", "wap.carrier", "mms.default", "internt", "web.prepaid"]

CARD_BRANDS = ["Visa", "Mastercard", "Amex", "Discover"]

BANKS = ["First Harbor Bank", "Cedar Credit Union", "Northline Bank"]

PERSONAS = [
    "Polite and to the point; answers exactly what is asked.",
    "In a hurry; wants the problem fixed quickly but follows instructions.",
    "Chatty and warm; mentions why they need their phone today.",
    "Cautious; asks what each step will do before agreeing.",
    "Not comfortable with technology; needs each phone step spelled out.",
]

REASON_SYNONYMS: dict[str, tuple[str, ...]] = {
    # how customers and agents say the refusal reasons of this carrier's tasks in other words
    "overdue": ("past due",),
    "someone else's account": ("another customer's account", "a different account"),
}
