/*
 * emu_search_pages: the corpus of the emulator's web (emu_search.h): eight
 * pages about made-up topics, so no model's prior knowledge can answer for
 * them and a test can tell a cited fact from an invented one, and two
 * results on made-up outside domains (example.org, example.net: listed by
 * the search, never served) for allowed_domains tests. Every entry matches
 * the word "fictional", so that query lists them all (ten: more than the
 * largest search_context_size takes). The bodies are plain HTML fragments;
 * emu_search.c wraps each in a full document (head, style, scripts, nav,
 * footer).
 */
#include "emu_search.h"

const struct sb_emu_doc sb_emu_docs[] = {
    {"zorblax", NULL, "Zorblax fruit",
     "The zorblax is a blue-skinned fruit grown on the terraces of Mount Terrel. It tastes of pear and cinnamon "
     "and is harvested in late October.",
     "fictional fruit food terrel harvest",
     "<h1>Zorblax fruit</h1>\n"
     "<p>The <b>zorblax</b> is a blue-skinned fruit grown only on the terraces of Mount Terrel. Its flesh is "
     "pale green and tastes of pear and cinnamon.</p>\n"
     "<h2>Harvest</h2>\n"
     "<p>Zorblax trees flower in May; the fruit is harvested in late October, when the skin turns from teal to "
     "deep blue. A single tree yields about 40&nbsp;kg a year.</p>\n"
     "<h2>Nutrition</h2>\n"
     "<ul><li>Vitamin C: 61&nbsp;mg per 100&nbsp;g</li><li>Fibre: 3.2&nbsp;g per 100&nbsp;g</li>"
     "<li>Energy: 52&nbsp;kcal per 100&nbsp;g</li></ul>\n"
     "<p>Terrel growers say a ripe zorblax &ldquo;hums&rdquo; when tapped.</p>"},
    {"quintar", NULL, "Quintar river",
     "The Quintar river runs 412 km from the Ossel Highlands to the Bay of Marrow, passing the city of Lorn.",
     "fictional river geography ossel marrow lorn",
     "<h1>Quintar river</h1>\n"
     "<p>The <b>Quintar</b> is a river 412&nbsp;km long. It rises in the Ossel Highlands and flows west to the "
     "Bay of Marrow.</p>\n"
     "<p>The city of Lorn stands where the Quintar meets its largest tributary, the Vell. Three bridges cross the "
     "river at Lorn, the oldest being the Tessel bridge.</p>\n"
     "<table><tr><th>Section</th><th>Length</th></tr><tr><td>Upper Quintar</td><td>130 km</td></tr>"
     "<tr><td>Lower Quintar</td><td>282 km</td></tr></table>"},
    {"helix-cafe", NULL, "Helix cafe opening hours",
     "Helix cafe, 14 Spiral Lane, is open Monday to Friday 07:30-18:00 and Saturday 09:00-16:00; closed on "
     "Sundays.",
     "fictional cafe coffee hours opening times spiral",
     "<h1>Helix cafe</h1>\n"
     "<p>Helix cafe is at 14 Spiral Lane, Lorn.</p>\n"
     "<h2>Opening hours</h2>\n"
     "<ul><li>Monday to Friday: 07:30&ndash;18:00</li><li>Saturday: 09:00&ndash;16:00</li>"
     "<li>Sunday: closed</li></ul>\n"
     "<p>The house speciality is the double-spiral latte &amp; a slice of zorblax cake.</p>"},
    {"vantor-lamp", NULL, "The Vantor lamp",
     "The Vantor lamp, a rotating lighthouse lamp with a mercury float, was invented by Ida Vantor in 1887.",
     "fictional lamp lighthouse invention history ida",
     "<h1>The Vantor lamp</h1>\n"
     "<p>Ida Vantor invented her rotating lighthouse lamp in 1887. The lamp floats on a bath of mercury, so a "
     "clockwork of only 4&nbsp;kg can turn a lens of two tonnes.</p>\n"
     "<p>The first Vantor lamp was lit at Cape Orrin on 2 March 1888 and could be seen 31 nautical miles "
     "away.</p>"},
    {"glimmer-moss", NULL, "Glimmer moss care guide",
     "Glimmer moss glows faintly green at night. Mist it twice a day and keep it between 12 and 18 degrees.",
     "fictional moss plant care gardening glow",
     "<h1>Glimmer moss care guide</h1>\n"
     "<p>Glimmer moss glows a faint green for about six hours after dark.</p>\n"
     "<ol><li>Mist it twice a day with rain water.</li><li>Keep it between 12 and 18 &deg;C.</li>"
     "<li>Never put it in direct sunlight: it stops glowing for a week.</li></ol>\n"
     "<pre>  watering: 2x daily\n  light:    shade</pre>"},
    {"orrin-festival", NULL, "Orrin kite festival 2031",
     "The Orrin kite festival takes place on 14-16 August 2031 on the dunes of Cape Orrin; entry is free.",
     "fictional festival kite event orrin august",
     "<h1>Orrin kite festival 2031</h1>\n"
     "<p>The festival takes place on <strong>14&ndash;16 August 2031</strong> on the dunes of Cape Orrin, "
     "beside the Vantor lighthouse.</p>\n"
     "<p>Entry is free. The night flight of lit kites starts at 21:00 on the Saturday.</p>"},
    {"brask-language", NULL, "Brask language basics",
     "In Brask, hello is \"vel\" and thank you is \"ossa vren\". The language has 19 letters.",
     "fictional language brask words greeting",
     "<h1>Brask language basics</h1>\n"
     "<p>Brask is written with 19 letters.</p>\n"
     "<dl><dt>vel</dt><dd>hello</dd><dt>ossa vren</dt><dd>thank you</dd><dt>tor</dt><dd>river</dd></dl>\n"
     "<p>The Brask name of the Quintar river is <i>Tor Quinta</i>.</p>"},
    {"tessel-bridge", NULL, "Tessel bridge history",
     "The Tessel bridge, the oldest of Lorn's three bridges over the Quintar river, was built in 1902.",
     "fictional bridge history lorn quintar",
     "<h1>Tessel bridge</h1>\n"
     "<p>The Tessel bridge was built in 1902 by the engineer Marta Tessel. It is the oldest of the three bridges "
     "that cross the Quintar river at Lorn.</p>\n"
     "<p>It has five stone arches and is 186&nbsp;m long.</p>"},
    {NULL, "https://wiki.example.org/wiki/Zorblax", "Zorblax - Example Wiki",
     "Zorblax (Terrel fruit): a blue fruit of Mount Terrel, eaten fresh or made into jam.",
     "fictional fruit terrel jam", NULL},
    {NULL, "https://news.example.net/2029/quintar-flood", "The Quintar river flood of 2029",
     "In April 2029 the Quintar river rose 4 metres at Lorn; the Tessel bridge stayed open.",
     "fictional river flood news lorn", NULL},
};

const size_t sb_emu_ndocs = sizeof sb_emu_docs / sizeof sb_emu_docs[0];
