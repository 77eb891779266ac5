"""Word lists the generator draws from: catalogue, names, places. castbench's own choices."""

from __future__ import annotations

SIZES = ["S", "M", "L", "XL"]
SHOE_SIZES = ["7", "8", "9", "10", "11", "12"]

CATALOGUE: dict[str, tuple[float, dict[str, list[str]]]] = {
    # product type: (base price, option name -> values)
    "Desk Lamp": (
        39.0,
        {"colour": ["black", "white", "brass"], "bulb": ["LED", "halogen"], "mount": ["clamp", "base"]},
    ),
    "Running Shoe": (
        89.0,
        {"size": SHOE_SIZES, "colour": ["grey", "red", "navy"], "surface": ["road", "trail"]},
    ),
    "Hoodie": (
        49.0,
        {"size": SIZES, "colour": ["charcoal", "forest green", "burgundy"], "fit": ["regular", "relaxed"]},
    ),
    "Wireless Earbuds": (
        119.0,
        {
            "colour": ["black", "white", "sage"],
            "noise cancelling": ["yes", "no"],
            "case": ["standard", "wireless charging"],
        },
    ),
    "Coffee Grinder": (
        79.0,
        {"burr": ["conical", "flat"], "capacity": ["250g", "400g"], "colour": ["black", "steel"]},
    ),
    "Yoga Mat": (
        34.0,
        {
            "thickness": ["4mm", "6mm", "8mm"],
            "material": ["TPE", "natural rubber", "cork"],
            "colour": ["teal", "plum", "sand"],
        },
    ),
    "Backpack": (
        64.0,
        {
            "capacity": ["18L", "25L", "32L"],
            "colour": ["black", "olive", "rust"],
            "material": ["nylon", "canvas"],
        },
    ),
    "Electric Kettle": (
        45.0,
        {
            "capacity": ["1L", "1.5L", "1.7L"],
            "material": ["glass", "stainless steel", "plastic"],
            "temperature control": ["yes", "no"],
        },
    ),
    "Office Chair": (
        229.0,
        {
            "colour": ["black", "grey", "blue"],
            "armrests": ["fixed", "adjustable"],
            "material": ["mesh", "fabric", "leather"],
        },
    ),
    "Smartwatch": (
        249.0,
        {
            "case size": ["40mm", "44mm"],
            "colour": ["silver", "black", "rose gold"],
            "connectivity": ["GPS", "GPS + cellular"],
        },
    ),
    "Bluetooth Speaker": (
        69.0,
        {"colour": ["red", "black", "blue"], "battery": ["10h", "20h"], "waterproof": ["yes", "no"]},
    ),
    "Water Bottle": (
        24.0,
        {
            "capacity": ["500ml", "750ml", "1L"],
            "material": ["steel", "glass", "plastic"],
            "colour": ["white", "black", "coral"],
        },
    ),
    "Camping Tent": (
        189.0,
        {
            "capacity": ["2-person", "4-person", "6-person"],
            "season": ["3-season", "4-season"],
            "colour": ["green", "orange"],
        },
    ),
    "Mechanical Keyboard": (
        129.0,
        {
            "switch": ["red", "brown", "blue"],
            "layout": ["full", "tenkeyless", "60%"],
            "backlight": ["RGB", "white", "none"],
        },
    ),
    "Gaming Mouse": (
        59.0,
        {"sensor": ["optical", "laser"], "connection": ["wired", "wireless"], "colour": ["black", "white"]},
    ),
    "Monitor": (
        279.0,
        {"size": ["24in", "27in", "32in"], "resolution": ["1080p", "1440p", "4K"], "panel": ["IPS", "VA"]},
    ),
    "Air Purifier": (
        159.0,
        {
            "room size": ["small", "medium", "large"],
            "filter": ["HEPA", "carbon"],
            "colour": ["white", "black"],
        },
    ),
    "Blender": (
        89.0,
        {"capacity": ["1L", "1.5L", "2L"], "power": ["600W", "900W", "1200W"], "colour": ["black", "red"]},
    ),
    "Cookware Set": (
        149.0,
        {"pieces": ["5", "8", "12"], "material": ["stainless steel", "cast iron", "nonstick"]},
    ),
    "Rain Jacket": (
        99.0,
        {"size": SIZES, "colour": ["yellow", "navy", "black"], "hood": ["fixed", "packable"]},
    ),
    "Jeans": (
        69.0,
        {
            "waist": ["30", "32", "34", "36"],
            "fit": ["slim", "straight", "relaxed"],
            "wash": ["light", "dark"],
        },
    ),
    "Sunglasses": (
        79.0,
        {
            "frame": ["metal", "acetate"],
            "lens": ["polarized", "non-polarized"],
            "colour": ["tortoise", "black", "gold"],
        },
    ),
    "Wall Clock": (
        42.0,
        {
            "diameter": ["25cm", "35cm"],
            "style": ["modern", "vintage"],
            "colour": ["black", "walnut", "white"],
        },
    ),
    "Throw Blanket": (
        54.0,
        {
            "material": ["fleece", "wool", "cotton"],
            "colour": ["cream", "grey", "mustard"],
            "size": ["50x60in", "60x80in"],
        },
    ),
    "Bicycle Helmet": (
        74.0,
        {"size": ["S", "M", "L"], "colour": ["matte black", "white", "lime"], "visor": ["yes", "no"]},
    ),
    "Tablet": (
        399.0,
        {"storage": ["64GB", "128GB", "256GB"], "colour": ["silver", "graphite"], "screen": ["10in", "12in"]},
    ),
    "E-Reader": (
        129.0,
        {"storage": ["8GB", "32GB"], "backlight": ["warm", "cool"], "colour": ["black", "blue"]},
    ),
    "Portable Charger": (
        39.0,
        {
            "capacity": ["10000mAh", "20000mAh", "26800mAh"],
            "colour": ["black", "white"],
            "output": ["18W", "45W", "65W"],
        },
    ),
    "Digital Camera": (
        549.0,
        {"resolution": ["20MP", "24MP", "30MP"], "zoom": ["3x", "5x", "10x"], "colour": ["black", "silver"]},
    ),
    "Robot Vacuum": (
        299.0,
        {"suction": ["standard", "high", "max"], "mapping": ["yes", "no"], "colour": ["black", "white"]},
    ),
    "Skateboard": (
        84.0,
        {"deck": ["maple", "bamboo"], "length": ["31in", "34in"], "wheel hardness": ["78A", "99A"]},
    ),
    "Tennis Racket": (
        139.0,
        {
            "head size": ["98 sq in", "100 sq in", "105 sq in"],
            "grip": ["2", "3", "4"],
            "weight": ["280g", "300g"],
        },
    ),
    "Notebook": (
        14.0,
        {"ruling": ["dotted", "lined", "blank"], "size": ["A5", "A4"], "cover": ["hard", "soft"]},
    ),
    "Fountain Pen": (
        58.0,
        {
            "nib": ["fine", "medium", "broad"],
            "colour": ["black", "green", "burgundy"],
            "material": ["resin", "brass"],
        },
    ),
    "Desk Organizer": (29.0, {"material": ["bamboo", "metal", "acrylic"], "compartments": ["4", "6", "8"]}),
    "Ceramic Vase": (
        36.0,
        {
            "height": ["20cm", "30cm", "40cm"],
            "glaze": ["matte", "glossy"],
            "colour": ["white", "sage", "terracotta"],
        },
    ),
    "Scented Candle": (
        19.0,
        {
            "scent": ["cedar", "lavender", "citrus", "vanilla"],
            "size": ["small", "large"],
            "jar": ["glass", "tin"],
        },
    ),
    "Bath Towel Set": (
        44.0,
        {
            "colour": ["white", "navy", "grey", "blush"],
            "material": ["cotton", "bamboo"],
            "pieces": ["2", "4", "6"],
        },
    ),
    "Pillow": (
        49.0,
        {
            "firmness": ["soft", "medium", "firm"],
            "fill": ["down", "memory foam", "polyester"],
            "size": ["standard", "king"],
        },
    ),
    "Dumbbell Set": (
        119.0,
        {
            "weight": ["10lb", "25lb", "50lb"],
            "material": ["iron", "rubber-coated"],
            "adjustable": ["yes", "no"],
        },
    ),
    "Jump Rope": (
        16.0,
        {"length": ["9ft", "10ft"], "handle": ["foam", "aluminium"], "cable": ["steel", "PVC"]},
    ),
    "Hiking Boot": (149.0, {"size": SHOE_SIZES, "waterproof": ["yes", "no"], "colour": ["brown", "black"]}),
    "Baseball Cap": (
        22.0,
        {
            "colour": ["navy", "khaki", "black", "red"],
            "size": ["S/M", "L/XL"],
            "closure": ["snapback", "strap"],
        },
    ),
    "Wallet": (
        48.0,
        {
            "material": ["leather", "canvas"],
            "style": ["bifold", "trifold", "card holder"],
            "colour": ["brown", "black", "tan"],
        },
    ),
    "Phone Case": (
        27.0,
        {
            "model": ["Model 12", "Model 13", "Model 14"],
            "material": ["silicone", "leather", "clear"],
            "colour": ["black", "midnight blue", "clay"],
        },
    ),
    "Headphones": (
        159.0,
        {
            "type": ["over-ear", "on-ear"],
            "connection": ["wired", "wireless"],
            "colour": ["black", "silver", "blue"],
        },
    ),
    "Garden Hose": (
        38.0,
        {"length": ["25ft", "50ft", "100ft"], "material": ["rubber", "vinyl"], "nozzle": ["yes", "no"]},
    ),
    "Cordless Drill": (
        109.0,
        {
            "voltage": ["12V", "18V", "20V"],
            "battery": ["1 battery", "2 batteries"],
            "chuck": ["3/8in", "1/2in"],
        },
    ),
    "Board Game": (
        39.0,
        {
            "edition": ["standard", "deluxe"],
            "language": ["English", "Spanish", "French"],
            "players": ["2-4", "2-6"],
        },
    ),
    "Dog Bed": (
        64.0,
        {"size": SIZES, "material": ["fleece", "canvas", "memory foam"], "colour": ["grey", "brown"]},
    ),
}

FIRST_NAMES = [
    "Amara",
    "Bennett",
    "Camila",
    "Dmitri",
    "Elena",
    "Farid",
    "Greta",
    "Hiro",
    "Ines",
    "Jonah",
    "Keira",
    "Luca",
    "Maya",
    "Nikhil",
    "Olga",
    "Pablo",
    "Quinn",
    "Rosa",
    "Samir",
    "Talia",
    "Umar",
    "Vera",
    "Wes",
    "Ximena",
    "Yusuf",
    "Zoe",
    "Arjun",
    "Bianca",
    "Cyrus",
    "Dalia",
    "Emeka",
    "Freya",
    "Gideon",
    "Hana",
    "Ivan",
    "Jada",
    "Kofi",
    "Lena",
    "Marco",
    "Nadia",
    "Oscar",
    "Priya",
    "Rafael",
    "Sienna",
    "Tobias",
    "Uma",
    "Victor",
    "Wren",
    "Yara",
    "Zane",
]

LAST_NAMES = [
    "Abara",
    "Brandt",
    "Castillo",
    "Dubois",
    "Eriksen",
    "Fontaine",
    "Gallo",
    "Haddad",
    "Ibarra",
    "Jansen",
    "Kowalski",
    "Lindqvist",
    "Moreau",
    "Nakamura",
    "Okafor",
    "Petrov",
    "Quintero",
    "Rossi",
    "Schmidt",
    "Tanaka",
    "Ueda",
    "Varga",
    "Whitfield",
    "Xu",
    "Yilmaz",
    "Zielinski",
    "Achebe",
    "Bauer",
    "Chowdhury",
    "Delgado",
    "Esposito",
    "Fischer",
    "Gupta",
    "Holloway",
    "Iverson",
    "Jimenez",
    "Kaur",
    "Laurent",
    "Mensah",
    "Novak",
]

CITIES = [
    ("Portland", "OR", "972"),
    ("Denver", "CO", "802"),
    ("Austin", "TX", "787"),
    ("Atlanta", "GA", "303"),
    ("Madison", "WI", "537"),
    ("Raleigh", "NC", "276"),
    ("Tucson", "AZ", "857"),
    ("Boise", "ID", "837"),
    ("Columbus", "OH", "432"),
    ("Richmond", "VA", "232"),
    ("Omaha", "NE", "681"),
    ("Spokane", "WA", "992"),
    ("Savannah", "GA", "314"),
    ("Albany", "NY", "122"),
    ("Fresno", "CA", "937"),
    ("Reno", "NV", "895"),
    ("Tulsa", "OK", "741"),
    ("Burlington", "VT", "054"),
    ("Providence", "RI", "029"),
    ("Lansing", "MI", "489"),
    ("Knoxville", "TN", "379"),
    ("Durham", "NC", "277"),
    ("Sacramento", "CA", "958"),
    ("Pittsburgh", "PA", "152"),
]

STREETS = [
    "Maple Avenue",
    "Cedar Lane",
    "Harbor Road",
    "Juniper Street",
    "Orchard Way",
    "Willow Court",
    "Granite Drive",
    "Lakeview Terrace",
    "Sycamore Street",
    "Meadow Lane",
    "Quarry Road",
    "Beacon Street",
    "Aspen Circle",
    "Foundry Street",
    "Hillcrest Drive",
    "Riverside Avenue",
    "Chestnut Place",
    "Elm Row",
    "Prospect Avenue",
    "Larkspur Lane",
    "Summit Road",
    "Copper Street",
    "Hawthorn Way",
    "Bayberry Drive",
]

CARD_BRANDS = ["visa", "mastercard", "amex", "discover"]
EMAIL_DOMAINS = ["example.com", "example.net", "example.org"]
PERSONAS = [
    "Polite and brief; answers exactly what is asked.",
    "A little impatient; wants this done quickly but cooperates.",
    "Friendly and chatty; adds small talk but stays on topic.",
    "Careful and detail-oriented; double-checks what the agent says.",
    "Unsure with technology; needs things explained simply.",
]

REASON_SYNONYMS: dict[str, tuple[str, ...]] = {
    # how customers and agents say the refusal reasons of this store's tasks in other words
    "different kind of product": ("different type of product", "different product type"),
    "not delivered": ("not arrived", "undelivered"),
    "not been delivered": ("not arrived", "undelivered"),
}
