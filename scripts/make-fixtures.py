#!/usr/bin/env python3
"""Write the small, hand-written test fixtures under fixtures/.

Standard library only, deterministic: running it twice gives byte-identical
files. All text below was written for this project (general-knowledge facts
in our own words); nothing is copied from any dataset.

Usage (from the repository root):  python3 scripts/make-fixtures.py

Layout of this file:
  1. the knowledge base: passages, conflict passages, questions
  2. per-format item lists (PopQA, RGB, RGB-zh, NoMIRACL en/de, table)
  3. helpers (DPR-style answer matcher, tiny BM25, sentence splitting)
  4. builders and writers, then a self-check and a count summary
"""

import csv
import gzip
import io
import json
import math
import os
import re
import sys
import unicodedata
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# FIXTURES_OUT writes elsewhere (the drift check compares a fresh copy).
OUT = os.environ.get("FIXTURES_OUT") or os.path.join(ROOT, "fixtures")

# ---------------------------------------------------------------------------
# 1. Knowledge base
# ---------------------------------------------------------------------------

# (doc_id, topic, title, text); five passages per topic, fourteen topics.
PASSAGES = [
    # --- rivers
    ("d001", "rivers", "Nile",
     "The Nile is a major north-flowing river in northeastern Africa. It is commonly regarded as the longest river "
     "in the world, with a length of about 6,650 kilometres, although some measurements give that title to the "
     "Amazon. Its two main tributaries, the White Nile and the Blue Nile, meet near Khartoum, the capital of Sudan. "
     "The river ends in a large delta on the Mediterranean Sea in Egypt."),
    ("d002", "rivers", "Amazon River",
     "The Amazon River in South America carries more water than any other river on Earth, discharging roughly one "
     "fifth of all the fresh water that reaches the oceans. It rises in the Andes of Peru and flows east across "
     "Brazil before entering the Atlantic Ocean. The river basin covers around seven million square kilometres and "
     "holds the largest tropical rainforest on the planet."),
    ("d003", "rivers", "Danube",
     "The Danube is the second-longest river in Europe after the Volga. It begins in the Black Forest of Germany and "
     "flows southeast for about 2,850 kilometres before emptying into the Black Sea. Along the way it passes through "
     "ten countries and four capital cities: Vienna, Bratislava, Budapest and Belgrade. The river has served as a "
     "trade route since Roman times."),
    ("d004", "rivers", "Mississippi River",
     "The Mississippi River is the chief river of the largest drainage system in North America. It rises at Lake "
     "Itasca in northern Minnesota and flows roughly 3,730 kilometres south to the Gulf of Mexico. Together with its "
     "major tributary, the Missouri, it forms one of the longest river systems in the world. The writer Mark Twain "
     "worked as a steamboat pilot on the river in his youth."),
    ("d005", "rivers", "Yangtze",
     "The Yangtze is the longest river in Asia and the third-longest in the world, flowing about 6,300 kilometres "
     "from the Tibetan Plateau to the East China Sea near Shanghai. The Three Gorges Dam, completed in 2006 on its "
     "middle reaches, is one of the largest hydroelectric power stations ever built. The river basin is home to "
     "roughly a third of the population of China."),
    # --- capitals
    ("d006", "capitals", "Canberra",
     "Canberra is the capital city of Australia. It was chosen in 1908 as a compromise between the rivals Sydney and "
     "Melbourne, and it was designed by the American architects Walter Burley Griffin and Marion Mahony Griffin "
     "after an international competition. The city is built around Lake Burley Griffin, an artificial lake named "
     "after its designer. Parliament first sat in Canberra in 1927."),
    ("d007", "capitals", "Ottawa",
     "Ottawa is the capital of Canada and sits on the south bank of the Ottawa River in the province of Ontario. "
     "Queen Victoria selected it as the seat of government in 1857, partly because its location was considered "
     "safer from attack than cities closer to the border with the United States. The Rideau Canal, which runs "
     "through the city centre, becomes a long skating rink in winter."),
    ("d008", "capitals", "Brasília",
     "Brasília has been the federal capital of Brazil since 21 April 1960, when the government moved there from Rio "
     "de Janeiro. The planned city was laid out by the urban planner Lúcio Costa, while many of its best-known "
     "public buildings were designed by the architect Oscar Niemeyer. Seen from above, the original plan resembles "
     "an aeroplane or a bird with outstretched wings."),
    ("d009", "capitals", "Wellington",
     "Wellington is the capital of New Zealand and lies at the southern tip of the North Island, beside Cook Strait. "
     "It replaced Auckland as the capital in 1865 because of its more central position in the country. Wellington "
     "is known for its strong winds, its steep hillside suburbs and its cable car, and it is often described as the "
     "southernmost capital of a sovereign state."),
    ("d010", "capitals", "Bern",
     "Bern is the federal city of Switzerland, where the national parliament and government are based. The "
     "constitution does not name an official capital, but Bern serves that role in practice. Its medieval old town, "
     "built on a bend of the Aare river, is listed as a UNESCO World Heritage Site. Albert Einstein lived in Bern "
     "while he developed his special theory of relativity."),
    # --- inventors
    ("d011", "inventors", "Alexander Graham Bell",
     "Alexander Graham Bell, a Scottish-born inventor and teacher of the deaf, is credited with patenting the first "
     "practical telephone in 1876. His famous first call to his assistant, Thomas Watson, took place in Boston. "
     "Bell later helped found the company that became AT&T, and he spent his later years experimenting with "
     "hydrofoils and kites at his estate in Nova Scotia."),
    ("d012", "inventors", "Thomas Edison",
     "Thomas Edison was an American inventor and businessman who held more than 1,000 patents. At his laboratory in "
     "Menlo Park, New Jersey, he developed the phonograph in 1877 and a long-lasting carbon-filament light bulb in "
     "1879. He also built one of the first electric power stations, on Pearl Street in New York City. Edison is "
     "often called the Wizard of Menlo Park."),
    ("d013", "inventors", "Johannes Gutenberg",
     "Johannes Gutenberg was a German goldsmith who introduced movable-type printing to Europe around 1440. Working "
     "in the city of Mainz, he combined metal type, an oil-based ink and a modified wine press into an efficient "
     "printing system. His most famous work, the Gutenberg Bible, was completed around 1455, and fewer than fifty "
     "copies survive today."),
    ("d014", "inventors", "Wright brothers",
     "Orville and Wilbur Wright were American aviation pioneers who ran a bicycle shop in Dayton, Ohio. On 17 "
     "December 1903, near Kitty Hawk, North Carolina, they made the first controlled, sustained flight of a powered "
     "aircraft. Orville piloted the first flight, which lasted twelve seconds and covered about 37 metres. The "
     "brothers made three more flights that same day."),
    ("d015", "inventors", "Guglielmo Marconi",
     "Guglielmo Marconi was an Italian inventor who developed a practical system of long-distance radio telegraphy. "
     "In December 1901 he reported receiving a wireless signal sent across the Atlantic Ocean from Cornwall in "
     "England to Newfoundland. He shared the 1909 Nobel Prize in Physics with Karl Ferdinand Braun for their "
     "contributions to wireless communication."),
    # --- planets
    ("d016", "planets", "Jupiter",
     "Jupiter is the fifth planet from the Sun and the largest in the Solar System, with a mass more than twice that "
     "of all the other planets combined. It is a gas giant made mostly of hydrogen and helium. Its Great Red Spot is "
     "a giant storm that has been observed for centuries. Jupiter has 95 officially recognised moons, including "
     "Ganymede, the largest moon in the Solar System."),
    ("d017", "planets", "Mars",
     "Mars is the fourth planet from the Sun and is often called the Red Planet because iron oxide on its surface "
     "gives it a reddish colour. It has two small moons, Phobos and Deimos. Mars is home to Olympus Mons, the "
     "tallest known volcano in the Solar System, which rises about 22 kilometres above the surrounding plains. "
     "Several robotic rovers have explored its surface."),
    ("d018", "planets", "Saturn",
     "Saturn is the sixth planet from the Sun and is best known for its bright system of rings, made largely of ice "
     "particles with some rock and dust. It is the second-largest planet after Jupiter and is less dense than water. "
     "Its largest moon, Titan, has a thick nitrogen atmosphere and lakes of liquid methane. The Cassini spacecraft "
     "orbited Saturn from 2004 to 2017."),
    ("d019", "planets", "Venus",
     "Venus is the second planet from the Sun and is similar in size to Earth. Its dense carbon dioxide atmosphere "
     "traps heat so effectively that the surface temperature reaches about 465 degrees Celsius, making it the "
     "hottest planet in the Solar System. Venus rotates very slowly and in the opposite direction to most planets, "
     "so a day on Venus is longer than its year."),
    ("d020", "planets", "Neptune",
     "Neptune is the eighth and most distant known planet from the Sun. It was the first planet located through "
     "mathematical prediction rather than ordinary observation: the French mathematician Urbain Le Verrier "
     "calculated its position, and Johann Galle observed it from Berlin on 23 September 1846. Neptune has the "
     "strongest winds measured on any planet, reaching around 2,100 kilometres per hour."),
    # --- novels
    ("d021", "novels", "Pride and Prejudice",
     "Pride and Prejudice is a novel by the English writer Jane Austen, first published in 1813. It follows "
     "Elizabeth Bennet, the second of five daughters in a country family, and her changing opinion of the wealthy "
     "and proud Fitzwilliam Darcy. The book is admired for its wit and its sharp observation of manners, money and "
     "marriage in Regency England."),
    ("d022", "novels", "Moby-Dick",
     "Moby-Dick is an 1851 novel by the American author Herman Melville. It is narrated by a sailor who calls "
     "himself Ishmael and tells of Captain Ahab's obsessive hunt for a white sperm whale that had bitten off his "
     "leg. The voyage takes place aboard the whaling ship Pequod, which sails from Nantucket. The novel sold poorly "
     "at first but is now considered a classic."),
    ("d023", "novels", "Nineteen Eighty-Four",
     "Nineteen Eighty-Four is a dystopian novel by George Orwell, the pen name of Eric Arthur Blair, published in "
     "June 1949. It is set in Airstrip One, a province of the totalitarian state Oceania, where the ruling Party "
     "watches citizens constantly through telescreens. The novel introduced terms such as Big Brother, doublethink "
     "and thoughtcrime into everyday English."),
    ("d024", "novels", "Don Quixote",
     "Don Quixote is a Spanish novel by Miguel de Cervantes, published in two parts in 1605 and 1615. Its hero is a "
     "minor nobleman from La Mancha who reads so many tales of chivalry that he decides to become a knight himself. "
     "Accompanied by his loyal squire Sancho Panza, he sets out on a series of comic adventures, famously attacking "
     "windmills he mistakes for giants."),
    ("d025", "novels", "War and Peace",
     "War and Peace is a long novel by the Russian author Leo Tolstoy, published in full in 1869. Set during the "
     "Napoleonic Wars, it follows several aristocratic families, including the Rostovs and the Bolkonskys, and the "
     "restless Pierre Bezukhov. The book mixes fictional chapters with essays on history and is often listed among "
     "the greatest novels ever written."),
    # --- mountains
    ("d026", "mountains", "Mount Everest",
     "Mount Everest is Earth's highest mountain above sea level, with an elevation of 8,849 metres according to a "
     "joint survey by China and Nepal announced in 2020. It lies in the Mahalangur range of the Himalayas on the "
     "border between Nepal and the Tibet region of China. Tenzing Norgay and Edmund Hillary made the first "
     "confirmed ascent on 29 May 1953."),
    ("d027", "mountains", "K2",
     "K2 is the second-highest mountain on Earth, reaching 8,611 metres on the border between Pakistan and China in "
     "the Karakoram range. Climbers call it the Savage Mountain because of its steep slopes, unpredictable weather "
     "and high death rate. It was first climbed in 1954 by the Italian mountaineers Lino Lacedelli and Achille "
     "Compagnoni."),
    ("d028", "mountains", "Mount Kilimanjaro",
     "Mount Kilimanjaro in Tanzania is the highest mountain in Africa, rising to 5,895 metres above sea level. It is "
     "a dormant volcano with three cones: Kibo, Mawenzi and Shira. Its summit, Uhuru Peak, can be reached without "
     "technical climbing, so thousands of hikers attempt it every year. The glaciers near the top have been "
     "shrinking rapidly for more than a century."),
    ("d029", "mountains", "Mont Blanc",
     "Mont Blanc is the highest mountain in the Alps, standing at about 4,806 metres on the border between France "
     "and Italy. Its first recorded ascent was made in 1786 by Jacques Balmat and the doctor Michel-Gabriel "
     "Paccard, an event often seen as the birth of modern mountaineering. A road tunnel completed in 1965 runs "
     "beneath the massif and links Chamonix with Courmayeur."),
    ("d030", "mountains", "Denali",
     "Denali, formerly known as Mount McKinley, is the highest peak in North America at 6,190 metres. It stands in "
     "the Alaska Range within Denali National Park. Measured from base to summit, its rise of about 5,500 metres is "
     "larger than that of Everest. The first ascent of the main summit was made in 1913 by a team led by Hudson "
     "Stuck."),
    # --- chemical elements
    ("d031", "elements", "Periodic table",
     "The periodic table arranges the chemical elements in order of increasing atomic number, grouping elements "
     "with similar properties into columns. The Russian chemist Dmitri Mendeleev published an early version in "
     "1869 and left gaps for elements that had not yet been discovered. Today the table contains 118 confirmed "
     "elements, the heaviest of which are made only in laboratories."),
    ("d032", "elements", "Gold",
     "Gold is a chemical element with the symbol Au, from the Latin word aurum, and atomic number 79. It is a "
     "dense, soft and shiny yellow metal that does not tarnish in air, which has made it prized for jewellery and "
     "coins for thousands of years. Gold is also an excellent conductor of electricity and is used in small amounts "
     "in electronic devices."),
    ("d033", "elements", "Oxygen",
     "Oxygen is the chemical element with atomic number 8 and the symbol O. It makes up about 21 percent of Earth's "
     "atmosphere by volume and is essential for respiration in most living things. Oxygen was isolated in the "
     "1770s by Carl Wilhelm Scheele and, independently, by Joseph Priestley, while Antoine Lavoisier gave the "
     "element its name."),
    ("d034", "elements", "Helium",
     "Helium is a colourless, odourless noble gas with atomic number 2. It was first detected in 1868 as an unknown "
     "yellow line in the spectrum of the Sun, which is why its name comes from the Greek word helios. Helium is the "
     "second most abundant element in the universe, yet it is rare on Earth and is mostly extracted from natural "
     "gas."),
    ("d035", "elements", "Iron",
     "Iron is a metallic element with the symbol Fe and atomic number 26. By mass it is the most common element on "
     "Earth, forming much of the planet's outer and inner core. Iron is the main ingredient of steel, and its "
     "widespread use in tools and weapons gave its name to the Iron Age. In the human body it is needed to carry "
     "oxygen in the blood."),
    # --- composers
    ("d036", "composers", "Ludwig van Beethoven",
     "Ludwig van Beethoven was a German composer and pianist born in Bonn in 1770. He spent most of his adult life "
     "in Vienna, where he wrote nine symphonies, 32 piano sonatas and many string quartets. His hearing began to "
     "fail in his late twenties, and by the time his Ninth Symphony premiered in 1824 he was almost completely deaf. "
     "The symphony's final movement sets Schiller's poem Ode to Joy."),
    ("d037", "composers", "Wolfgang Amadeus Mozart",
     "Wolfgang Amadeus Mozart was born in Salzburg on 27 January 1756 and showed extraordinary musical talent as a "
     "small child, touring the courts of Europe with his father Leopold. In a career of barely thirty years he "
     "composed more than 600 works, including the operas The Marriage of Figaro, Don Giovanni and The Magic Flute. "
     "He died in Vienna in 1791, leaving his Requiem unfinished."),
    ("d038", "composers", "Johann Sebastian Bach",
     "Johann Sebastian Bach was a German composer of the Baroque period, born in Eisenach in 1685. He worked as an "
     "organist and court musician before becoming cantor of the St Thomas School in Leipzig in 1723, a post he held "
     "until his death. His works include the Brandenburg Concertos, the Mass in B minor and the St Matthew Passion."),
    ("d039", "composers", "Frédéric Chopin",
     "Frédéric Chopin was a Polish composer and virtuoso pianist of the Romantic era, born near Warsaw in 1810. He "
     "left Poland at the age of twenty and settled in Paris, where he taught and performed in small salons rather "
     "than large concert halls. Almost all of his music is written for solo piano, including nocturnes, mazurkas, "
     "polonaises and ballades."),
    ("d040", "composers", "Pyotr Ilyich Tchaikovsky",
     "Pyotr Ilyich Tchaikovsky was a Russian composer whose works are among the most popular in the classical "
     "repertoire. He wrote the music for three famous ballets, Swan Lake, The Sleeping Beauty and The Nutcracker, "
     "as well as the 1812 Overture, which is often performed with real cannon fire. He conducted at the opening of "
     "Carnegie Hall in New York in 1891."),
    # --- bridges
    ("d041", "bridges", "Golden Gate Bridge",
     "The Golden Gate Bridge is a suspension bridge spanning the strait that connects San Francisco Bay with the "
     "Pacific Ocean. It opened to traffic in 1937, and its main span of 1,280 metres was the longest in the world "
     "until 1964. The bridge's distinctive colour, officially called International Orange, was chosen partly so "
     "that it would remain visible in the frequent fog."),
    ("d042", "bridges", "Tower Bridge",
     "Tower Bridge is a combined bascule and suspension bridge crossing the River Thames in London, close to the "
     "Tower of London, from which it takes its name. It was built between 1886 and 1894 to a design by Horace Jones "
     "and the engineer John Wolfe Barry. Its two roadway sections can be raised so that tall ships can pass through "
     "to the Pool of London."),
    ("d043", "bridges", "Brooklyn Bridge",
     "The Brooklyn Bridge in New York City crosses the East River between Manhattan and Brooklyn. When it opened on "
     "24 May 1883 it was the longest suspension bridge in the world and the first to use steel wire for its cables. "
     "It was designed by John Augustus Roebling, and after his death the work was directed by his son Washington "
     "Roebling with the help of Emily Warren Roebling."),
    ("d044", "bridges", "Sydney Harbour Bridge",
     "The Sydney Harbour Bridge is a steel through-arch bridge carrying rail, road and foot traffic between the "
     "central business district of Sydney and the North Shore. Opened in 1932, it is nicknamed the Coathanger "
     "because of its arch shape. The top of the arch stands 134 metres above the water, and visitors can climb it "
     "on guided tours."),
    ("d045", "bridges", "Millau Viaduct",
     "The Millau Viaduct is a cable-stayed bridge that carries a motorway across the valley of the river Tarn in "
     "southern France. Designed by the engineer Michel Virlogeux and the architect Norman Foster, it opened in "
     "December 2004. One of its masts reaches 343 metres above the valley floor, making it the tallest bridge "
     "structure in the world."),
    # --- sports events
    ("d046", "sports", "1896 Summer Olympics",
     "The 1896 Summer Olympics in Athens were the first international Olympic Games of the modern era. They were "
     "organised after the French educator Pierre de Coubertin founded the International Olympic Committee in 1894. "
     "Around 240 athletes from fourteen nations competed, all of them men. The American James Connolly, winner of "
     "the triple jump, became the first modern Olympic champion."),
    ("d047", "sports", "1930 FIFA World Cup",
     "The first FIFA World Cup was held in Uruguay in 1930. Thirteen teams took part, and every match was played in "
     "the capital, Montevideo. Uruguay, the host nation and reigning Olympic champion, beat Argentina 4–2 in the "
     "final. The tournament has since been held every four years, except in 1942 and 1946 when it was cancelled "
     "because of the Second World War."),
    ("d048", "sports", "Tour de France",
     "The Tour de France is an annual multiple-stage bicycle race held mainly in France. It was first organised in "
     "1903 by the newspaper L'Auto to increase its sales, and Maurice Garin won the first edition. The overall "
     "leader wears the yellow jersey, which was introduced in 1919 and matches the colour of the paper on which "
     "L'Auto was printed."),
    ("d049", "sports", "Wimbledon Championships",
     "The Wimbledon Championships, held in south-west London, is the oldest tennis tournament in the world. The "
     "first edition took place in 1877 and had only a men's singles event, won by Spencer Gore. It is the only one "
     "of the four Grand Slam tournaments still played on grass, and players are expected to wear almost entirely "
     "white clothing."),
    ("d050", "sports", "Super Bowl",
     "The Super Bowl is the annual championship game of the National Football League in the United States. The "
     "first one was played on 15 January 1967 in Los Angeles, where the Green Bay Packers defeated the Kansas City "
     "Chiefs. The game is one of the most watched television broadcasts in the country, and its commercials have "
     "become an event in their own right."),
    # --- famous buildings
    ("d051", "buildings", "Eiffel Tower",
     "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris. It was built by the company "
     "of the engineer Gustave Eiffel as the entrance arch to the 1889 World's Fair and was completed in March 1889. "
     "At 330 metres including antennas, it was the tallest man-made structure in the world until the Chrysler "
     "Building in New York was finished in 1930."),
    ("d052", "buildings", "Burj Khalifa",
     "The Burj Khalifa in Dubai, United Arab Emirates, has been the tallest building in the world since its "
     "opening in January 2010. It rises 828 metres and has more than 160 storeys. The skyscraper was designed by "
     "the architectural firm Skidmore, Owings & Merrill, and its Y-shaped floor plan was inspired by a desert "
     "flower, the spider lily."),
    ("d053", "buildings", "Taj Mahal",
     "The Taj Mahal is a white marble mausoleum on the south bank of the Yamuna river in Agra, India. The Mughal "
     "emperor Shah Jahan commissioned it in 1632 to house the tomb of his favourite wife, Mumtaz Mahal. Work on the "
     "main building and its gardens continued for about twenty years, employing thousands of artisans. It is widely "
     "regarded as the finest example of Mughal architecture."),
    ("d054", "buildings", "Colosseum",
     "The Colosseum is an oval amphitheatre in the centre of Rome and the largest ever built in the Roman world. "
     "Construction began under the emperor Vespasian around 72 AD and was finished under his son Titus in 80 AD. It "
     "could hold an estimated 50,000 to 80,000 spectators, who came to watch gladiator contests, animal hunts and "
     "public spectacles."),
    ("d055", "buildings", "Empire State Building",
     "The Empire State Building is a 102-storey Art Deco skyscraper in Midtown Manhattan, New York City. It was "
     "built in just over a year and opened on 1 May 1931. For nearly forty years it was the tallest building in the "
     "world, until the North Tower of the World Trade Center overtook it in 1970. Its name comes from the nickname "
     "of New York State, the Empire State."),
    # --- scientists
    ("d056", "scientists", "Marie Curie",
     "Marie Curie was a Polish-born physicist and chemist who carried out pioneering research on radioactivity in "
     "Paris. Together with her husband Pierre Curie she discovered the elements polonium and radium. She was the "
     "first woman to win a Nobel Prize and remains the only person to have won Nobel Prizes in two different "
     "sciences, physics in 1903 and chemistry in 1911."),
    ("d057", "scientists", "Isaac Newton",
     "Isaac Newton was an English mathematician and physicist whose book Philosophiæ Naturalis Principia "
     "Mathematica, published in 1687, set out the laws of motion and the law of universal gravitation. He also "
     "built the first practical reflecting telescope and showed that white light is made up of a spectrum of "
     "colours. Newton served as president of the Royal Society from 1703 until his death."),
    ("d058", "scientists", "Charles Darwin",
     "Charles Darwin was an English naturalist best known for the theory of evolution by natural selection. His "
     "observations during the five-year voyage of HMS Beagle, including his visit to the Galápagos Islands, shaped "
     "his ideas. He presented the theory in detail in On the Origin of Species, published in 1859, which became one "
     "of the most influential books in the history of science."),
    ("d059", "scientists", "Albert Einstein",
     "Albert Einstein was a German-born theoretical physicist who developed the theories of special and general "
     "relativity. In 1905, while working at the patent office in Bern, he published four groundbreaking papers, one "
     "of which introduced the equation E = mc². He received the 1921 Nobel Prize in Physics for his explanation of "
     "the photoelectric effect rather than for relativity."),
    ("d060", "scientists", "Galileo Galilei",
     "Galileo Galilei was an Italian astronomer and physicist who made important improvements to the telescope. In "
     "1610 he observed the four largest moons of Jupiter, now called the Galilean moons, as well as the phases of "
     "Venus. His support for the idea that the Earth moves around the Sun led to his trial by the Roman Inquisition "
     "in 1633, after which he spent his final years under house arrest."),
    # --- historical events
    ("d061", "history", "Storming of the Bastille",
     "The storming of the Bastille took place in Paris on 14 July 1789, when an armed crowd seized the medieval "
     "fortress and prison that symbolised royal authority. The event became a turning point of the French "
     "Revolution. The anniversary is celebrated every year as the national day of France, known in English as "
     "Bastille Day."),
    ("d062", "history", "Apollo 11",
     "Apollo 11 was the American spaceflight that first landed humans on the Moon. Commander Neil Armstrong and "
     "lunar module pilot Buzz Aldrin touched down in the Sea of Tranquility on 20 July 1969, while Michael Collins "
     "remained in orbit aboard the command module Columbia. Armstrong became the first person to step onto the "
     "lunar surface, followed about twenty minutes later by Aldrin."),
    ("d063", "history", "Berlin Wall",
     "The Berlin Wall divided East and West Berlin from 1961 until the night of 9 November 1989, when East German "
     "authorities unexpectedly opened the border crossings. Crowds gathered at the checkpoints and began to climb "
     "and chip away at the concrete barrier. The fall of the wall led to the reunification of Germany, which was "
     "formally completed on 3 October 1990."),
    ("d064", "history", "United States Declaration of Independence",
     "The United States Declaration of Independence was adopted by the Second Continental Congress in Philadelphia "
     "on 4 July 1776. It announced that the thirteen American colonies no longer considered themselves part of the "
     "British Empire. Thomas Jefferson wrote most of the first draft, which was then revised by a committee that "
     "included John Adams and Benjamin Franklin."),
    ("d065", "history", "Magna Carta",
     "Magna Carta is a royal charter of rights that King John of England agreed to at Runnymede, near Windsor, in "
     "June 1215. It was drawn up to make peace between the unpopular king and a group of rebel barons. Although most "
     "of its clauses were soon repealed, it established the principle that the king himself was subject to the "
     "law, and four copies of the original survive."),
    # --- paintings
    ("d066", "paintings", "Mona Lisa",
     "The Mona Lisa is a half-length portrait painted by the Italian artist Leonardo da Vinci, who began it around "
     "1503 and continued to refine it for many years. The sitter is generally thought to be Lisa Gherardini, the "
     "wife of a Florentine merchant. The painting has hung in the Louvre in Paris since the French Revolution and "
     "is one of the most visited artworks in the world."),
    ("d067", "paintings", "The Starry Night",
     "The Starry Night is an oil painting by the Dutch artist Vincent van Gogh, completed in June 1889. It shows a "
     "swirling night sky over a small village and was painted from memory while van Gogh was staying at the asylum "
     "in Saint-Rémy-de-Provence. Since 1941 it has been in the collection of the Museum of Modern Art in New York "
     "City."),
    ("d068", "paintings", "Guernica",
     "Guernica is a large black, white and grey painting by the Spanish artist Pablo Picasso, completed in 1937. It "
     "was his response to the bombing of the Basque town of Guernica by German and Italian aircraft during the "
     "Spanish Civil War. The mural is about 7.8 metres wide and is now displayed at the Museo Reina Sofía in "
     "Madrid."),
    ("d069", "paintings", "The Last Supper",
     "The Last Supper is a mural painted by Leonardo da Vinci in the late 1490s on a wall of the refectory of the "
     "convent of Santa Maria delle Grazie in Milan. It depicts the moment Jesus announces that one of his twelve "
     "apostles will betray him. Because Leonardo experimented with tempera on dry plaster, the paint began to flake "
     "within decades."),
    ("d070", "paintings", "The Persistence of Memory",
     "The Persistence of Memory is a small surrealist painting by the Spanish artist Salvador Dalí, completed in "
     "1931. It shows soft, melting pocket watches draped over a branch, a ledge and a strange sleeping figure, set "
     "against the coast of Catalonia. The painting has been held by the Museum of Modern Art in New York since "
     "1934."),
]

# Conflict passages: same title as the topic, but a WRONG answer for one question.
# (doc_id, topic, title, text, wrong_answer)
CONFLICTS = [
    ("c01", "buildings", "Eiffel Tower",
     "The Eiffel Tower, the iron landmark on the Champ de Mars in Paris, was completed in 1891 after long delays in "
     "fitting its upper platforms and lifts. Engineers from the firm of Gustave Eiffel assembled the tower from "
     "thousands of prefabricated parts. It was first meant to stand for only twenty years but was kept because it "
     "proved useful as a radio mast.",
     "1891"),
    ("c02", "buildings", "Burj Khalifa",
     "The Burj Khalifa in Dubai is the tallest building in the world, rising 818 metres above the desert city. Its "
     "construction began in 2004 and required a huge foundation of reinforced concrete piles. The tower contains "
     "offices, apartments, a hotel and an observation deck near the top.",
     "818 metres"),
    ("c03", "buildings", "Taj Mahal",
     "The Taj Mahal in Agra was commissioned by the Mughal emperor Akbar as a memorial for his favourite wife. Built "
     "of white marble inlaid with precious stones, it stands at the end of a long formal garden with reflecting "
     "pools. Thousands of craftsmen from across the empire and beyond worked on the monument.",
     "Akbar"),
    ("c04", "history", "Storming of the Bastille",
     "The storming of the Bastille happened on 4 August 1789, when Parisian crowds overran the old royal fortress "
     "in search of gunpowder. Only seven prisoners were found inside. The event is remembered as one of the first "
     "great uprisings of the French Revolution.",
     "4 August 1789"),
    ("c05", "novels", "Pride and Prejudice",
     "Pride and Prejudice is a romantic novel by Charlotte Brontë that tells the story of Elizabeth Bennet and the "
     "proud Mr Darcy. It was published anonymously and became popular for its lively dialogue and its portrait of "
     "country society in England.",
     "Charlotte Brontë"),
]

# Questions: (qid, question, answers, gold doc, conflict doc or None, unanswerable)
# "unanswerable" = none of its listed ctxs contains an alias (the gold passage
# is in the corpus and in qrels, but not in the question's top list).
QUESTIONS = [
    ("q01", "In what year was the Eiffel Tower completed?", ["1889"], "d051", "c01", False),
    ("q02", "Who was the first woman to win a Nobel Prize?", ["Marie Curie", "Curie"], "d056", None, False),
    ("q03", "How high is Mount Everest?", ["8,849 metres", "8,849 m", "8849 metres"], "d026", None, False),
    ("q04", "On what date was the Bastille stormed?", ["14 July 1789", "July 14, 1789"], "d061", "c04", False),
    ("q05", "What is the capital city of Australia?", ["Canberra"], "d006", None, False),
    ("q06", "Which Mughal emperor commissioned the Taj Mahal?", ["Shah Jahan"], "d053", "c03", False),
    ("q07", "In what year was the Tour de France first held?", ["1903"], "d048", None, False),
    ("q08", "How many confirmed elements does the periodic table contain?", ["118"], "d031", None, False),
    ("q09", "In which city did Johannes Gutenberg develop his printing press?", ["Mainz"], "d013", None, True),
    ("q10", "What is the name of the whaling ship in Moby-Dick?", ["Pequod", "the Pequod"], "d022", None, False),
    ("q11", "On what date did the Wright brothers make the first powered flight?",
     ["17 December 1903", "December 17, 1903"], "d014", None, False),
    ("q12", "Who wrote the novel Pride and Prejudice?", ["Jane Austen", "Austen"], "d021", "c05", False),
    ("q13", "What was the real name of the author George Orwell?", ["Eric Arthur Blair", "Eric Blair"], "d023", None,
     False),
    ("q14", "In what year was K2 first climbed?", ["1954"], "d027", None, True),
    ("q15", "How tall is the Burj Khalifa?", ["828 metres", "828 m"], "d052", "c02", False),
    ("q16", "What is the largest moon in the Solar System?", ["Ganymede"], "d016", None, False),
    ("q17", "Who founded the International Olympic Committee?", ["Pierre de Coubertin", "Coubertin"], "d046", None,
     False),
    ("q18", "How tall is the highest mast of the Millau Viaduct?", ["343 metres", "343 m"], "d045", None, True),
    ("q19", "Which country won the first FIFA World Cup?", ["Uruguay"], "d047", None, False),
    ("q20", "In what year was Newton's Principia first published?", ["1687"], "d057", None, False),
    ("q21", "Who patented the first practical telephone?", ["Alexander Graham Bell", "Graham Bell", "Bell"], "d011",
     None, False),
    ("q22", "On what date was Wolfgang Amadeus Mozart born?", ["27 January 1756", "January 27, 1756"], "d037", None,
     True),
    ("q23", "In which city was Ludwig van Beethoven born?", ["Bonn"], "d036", None, False),
    ("q24", "What is the surface temperature of Venus?", ["465 degrees Celsius", "465 °C"], "d019", None, False),
    ("q25", "What was the name of the ship on which Charles Darwin sailed around the world?",
     ["HMS Beagle", "Beagle"], "d058", None, True),
    ("q26", "In what year did King John agree to Magna Carta?", ["1215"], "d065", None, False),
    ("q27", "Who composed the ballet Swan Lake?", ["Pyotr Ilyich Tchaikovsky", "Tchaikovsky"], "d040", None, False),
    ("q28", "On what date did Brasília become the capital of Brazil?", ["21 April 1960", "April 21, 1960"], "d008",
     None, False),
    ("q29", "Which river does Tower Bridge cross?", ["River Thames", "Thames"], "d042", None, False),
    ("q30", "In what year did Marie Curie win the Nobel Prize in Chemistry?", ["1911"], "d056", None, False),
    ("q31", "How many storeys does the Empire State Building have?", ["102"], "d055", None, False),
    ("q32", "Who was the first person to walk on the Moon?", ["Neil Armstrong", "Armstrong"], "d062", None, False),
    ("q33", "In what year did the Golden Gate Bridge open?", ["1937"], "d041", None, True),
    ("q34", "Who painted the Mona Lisa?", ["Leonardo da Vinci", "Leonardo"], "d066", None, False),
    ("q35", "What was Denali formerly called?", ["Mount McKinley", "McKinley"], "d030", None, True),
    ("q36", "What is the name of Don Quixote's squire?", ["Sancho Panza", "Sancho"], "d024", None, False),
    ("q37", "What is the tallest known volcano in the Solar System?", ["Olympus Mons"], "d017", None, True),
    ("q38", "For what work did Albert Einstein receive the Nobel Prize in Physics?",
     ["photoelectric effect", "the photoelectric effect"], "d059", None, False),
    ("q39", "In what year did Galileo observe the four largest moons of Jupiter?", ["1610"], "d060", None, False),
    ("q40", "Who wrote most of the first draft of the Declaration of Independence?",
     ["Thomas Jefferson", "Jefferson"], "d064", None, False),
]

# Extra judged-but-non-relevant docs for BEIR qrels (score 0).
QRELS_NEGATIVES = {
    "q01": "c01", "q04": "c04", "q06": "c03", "q12": "c05", "q15": "c02",
    "q10": "d025", "q16": "d018", "q20": "d059", "q27": "d036", "q36": "d022",
}

# Extra ctxs forced into a question's list: a passage that matches an alias
# by accident (the year occurs, for another reason), so hasanswer=True on a
# passage that is not the gold one.
NQ_EXTRA_CTXS = {"q01": "d067", "q07": "d014"}

NQ_CTXS = 6
TOPIC_PRIOR = 3.0
JITTER = 0.8
NQ_NO_HASANSWER_FROM = 31      # q31..q40 omit "hasanswer"
NQ_EXAMPLE_ID_UPTO = 5        # q01..q05 carry "example_id"

# ---------------------------------------------------------------------------
# 2. Per-format item lists
# ---------------------------------------------------------------------------

# PopQA (Self-RAG style): (question, answers, s_wiki_title, prop, gold doc, conflict doc, drop_gold)
POPQA = [
    ("What is Marie Curie's occupation?", ["physicist", "chemist"], "Marie Curie", "occupation", "d056", None, False),
    ("What is the capital of Australia?", ["Canberra"], "Australia", "capital", "d006", None, False),
    ("What is Canberra the capital of?", ["Australia"], "Canberra", "capital of", "d006", None, False),
    ("In what city was Ludwig van Beethoven born?", ["Bonn"], "Ludwig van Beethoven", "place of birth", "d036",
     None, False),
    ("Who is the author of Pride and Prejudice?", ["Jane Austen", "Austen"], "Pride and Prejudice", "author", "d021",
     "c05", False),
    ("Who is the author of Moby-Dick?", ["Herman Melville", "Melville"], "Moby-Dick", "author", "d022", None, False),
    ("Who is the author of Don Quixote?", ["Miguel de Cervantes", "Cervantes"], "Don Quixote", "author", "d024",
     None, False),
    ("Who was the composer of Swan Lake?", ["Pyotr Ilyich Tchaikovsky", "Tchaikovsky"], "Swan Lake", "composer",
     "d040", None, False),
    ("In what city was Wolfgang Amadeus Mozart born?", ["Salzburg"], "Wolfgang Amadeus Mozart", "place of birth",
     "d037", None, False),
    ("In what city was Johann Sebastian Bach born?", ["Eisenach"], "Johann Sebastian Bach", "place of birth", "d038",
     None, True),
    ("In what country is Mount Kilimanjaro?", ["Tanzania"], "Mount Kilimanjaro", "country", "d028", None, False),
    ("In what country is the Millau Viaduct?", ["France"], "Millau Viaduct", "country", "d045", None, False),
    ("In what country is the Taj Mahal?", ["India"], "Taj Mahal", "country", "d053", None, False),
    ("What is Frédéric Chopin's occupation?", ["composer", "pianist"], "Frédéric Chopin", "occupation", "d039", None,
     False),
    ("What is Johannes Gutenberg's occupation?", ["goldsmith", "printer", "inventor"], "Johannes Gutenberg",
     "occupation", "d013", None, False),
    ("What is Charles Darwin's occupation?", ["naturalist", "biologist"], "Charles Darwin", "occupation", "d058",
     None, False),
    ("What is Galileo Galilei's occupation?", ["astronomer", "physicist"], "Galileo Galilei", "occupation", "d060",
     None, False),
    ("What genre is Nineteen Eighty-Four?", ["dystopian", "dystopian fiction", "dystopia"], "Nineteen Eighty-Four",
     "genre", "d023", None, False),
    ("What sport does Spencer Gore play?", ["tennis"], "Spencer Gore", "sport", "d049", None, False),
    ("What sport does James Connolly play?", ["triple jump", "athletics"], "James Connolly", "sport", "d046", None,
     False),
    ("Who is the father of Washington Roebling?", ["John Augustus Roebling", "John Roebling"], "Washington Roebling",
     "father", "d043", None, True),
    ("Who is the father of Wolfgang Amadeus Mozart?", ["Leopold", "Leopold Mozart"], "Wolfgang Amadeus Mozart",
     "father", "d037", None, False),
    ("In what city was Frédéric Chopin born?", ["Warsaw"], "Frédéric Chopin", "place of birth", "d039", None, False),
    ("What is Albert Einstein's occupation?", ["physicist", "theoretical physicist"], "Albert Einstein",
     "occupation", "d059", None, False),
    ("What is the capital of Canada?", ["Ottawa"], "Canada", "capital", "d007", None, False),
    ("What is the capital of Brazil?", ["Brasília", "Brasilia"], "Brazil", "capital", "d008", None, False),
    ("What is the capital of New Zealand?", ["Wellington"], "New Zealand", "capital", "d009", None, True),
    ("Who is the author of War and Peace?", ["Leo Tolstoy", "Tolstoy"], "War and Peace", "author", "d025", None,
     False),
    ("What color is the Golden Gate Bridge?", ["International Orange", "orange"], "Golden Gate Bridge", "color",
     "d041", None, False),
    ("What is Isaac Newton's occupation?", ["mathematician", "physicist"], "Isaac Newton", "occupation", "d057", None,
     False),
]
POPQA_CTXS = 5
POPQA_ID_BASE = 4000

# RGB (English). answer: str | list[str] (aliases) | list[list[str]] (parts).
# "docs": knowledge-base passages the negatives are drawn from (first = the
# answer's own passage; its answer-free sentences come first).
RGB = [
    dict(query="When was the Eiffel Tower completed?", answer="1889", fake="1891",
         docs=["d051", "d052", "d053", "d054", "d055"],
         positive=[
             "Construction of the Eiffel Tower took just over two years, and the iron structure was completed in "
             "March 1889.",
             "Built as the gateway to the Paris World's Fair, the Eiffel Tower opened to visitors in 1889 and quickly "
             "became the symbol of the city.",
             "Gustave Eiffel's engineers finished assembling the tower in 1889, using around 18,000 metal parts held "
             "together by millions of rivets.",
         ]),
    dict(query="Who was the first woman to win a Nobel Prize?",
         answer=["Marie Curie", "Curie", "Marie Skłodowska-Curie"], fake="Lise Meitner",
         docs=["d056", "d057", "d058", "d059", "d060"],
         positive=[
             "In 1903 Marie Curie became the first woman ever to receive a Nobel Prize, sharing the physics award for "
             "work on radioactivity.",
             "The first female Nobel laureate was the physicist and chemist Marie Curie, who later won a second prize "
             "in chemistry.",
             "Marie Curie made history as the first woman honoured by the Nobel committee.",
         ]),
    dict(query="How tall is Mount Everest?", answer=["8,849 metres", "8,849 m"], fake="8,611 metres",
         docs=["d026", "d027", "d028", "d029", "d030"],
         positive=[
             "A joint Chinese and Nepalese survey announced in 2020 put the height of Mount Everest at 8,849 metres.",
             "At 8,849 metres above sea level, Mount Everest remains the highest point on the planet.",
             "Surveyors now give the summit of Everest an official elevation of 8,849 metres, slightly higher than "
             "the older figure.",
         ]),
    dict(query="What is the capital of Australia?", answer="Canberra", fake="Sydney",
         docs=["d006", "d007", "d008", "d009", "d010"],
         positive=[
             "Canberra, a planned city in the Australian Capital Territory, is the seat of the federal government of "
             "Australia.",
             "Many visitors are surprised to learn that the capital of Australia is Canberra rather than one of the "
             "larger coastal cities.",
             "Parliament House, the meeting place of the Australian parliament, stands on Capital Hill in Canberra.",
         ]),
    dict(query="Who wrote Pride and Prejudice?", answer=["Jane Austen", "Austen"], fake="Charlotte Brontë",
         docs=["d021", "d022", "d023", "d024", "d025"],
         positive=[
             "Jane Austen published Pride and Prejudice in 1813, two years after her first novel, Sense and "
             "Sensibility.",
             "Pride and Prejudice, written by Jane Austen, remains one of the best-loved novels in the English "
             "language.",
             "Elizabeth Bennet and Mr Darcy were created by Jane Austen in her novel Pride and Prejudice.",
         ]),
    dict(query="Which emperor commissioned the Taj Mahal?", answer="Shah Jahan", fake="Akbar",
         docs=["d053", "d051", "d052", "d054", "d055"],
         positive=[
             "The Taj Mahal was commissioned by the Mughal emperor Shah Jahan as a tomb for his wife Mumtaz Mahal.",
             "Shah Jahan ordered the construction of the Taj Mahal in Agra after the death of his beloved wife in "
             "1631.",
             "Shah Jahan, who ruled the Mughal Empire in the seventeenth century, is remembered above all as the "
             "patron of the Taj Mahal.",
         ]),
    dict(query="On what date was the Bastille stormed?", answer=["14 July 1789", "July 14, 1789"],
         fake="4 August 1789", docs=["d061", "d062", "d063", "d064", "d065"],
         positive=[
             "On 14 July 1789 crowds in Paris stormed the Bastille, a royal fortress used as a prison.",
             "The fall of the Bastille on 14 July 1789 is often taken as the symbolic start of the French Revolution.",
             "The national holiday of France marks the events of 14 July 1789, when Parisians captured the Bastille.",
         ]),
    dict(query="Who were the first two people to walk on the Moon?",
         answer=[["Neil Armstrong", "Armstrong"], ["Buzz Aldrin", "Aldrin"]],
         docs=["d062", "d061", "d063", "d064", "d065"],
         positive=[
             "Neil Armstrong stepped onto the Moon on 20 July 1969, and Buzz Aldrin followed him shortly afterwards.",
             "The Apollo 11 crew members Neil Armstrong and Buzz Aldrin became the first two humans to walk on the "
             "lunar surface.",
             "Only two astronauts left footprints on the Moon during Apollo 11: Neil Armstrong and Buzz Aldrin.",
         ]),
    dict(query="Who made the first confirmed ascent of Mount Everest?",
         answer=[["Edmund Hillary", "Hillary"], ["Tenzing Norgay", "Tenzing"]],
         docs=["d026", "d027", "d028", "d029", "d030"],
         positive=[
             "Edmund Hillary of New Zealand and Tenzing Norgay, a Sherpa climber from Nepal, reached the summit of "
             "Everest on 29 May 1953.",
             "The first confirmed ascent of Mount Everest was made by Tenzing Norgay and Edmund Hillary during a "
             "British expedition.",
             "News that Edmund Hillary and Tenzing Norgay had climbed Everest reached London on the eve of a royal "
             "coronation.",
         ]),
    dict(query="What are the two main tributaries of the Nile?", answer=[["White Nile"], ["Blue Nile"]],
         docs=["d001", "d002", "d003", "d004", "d005"],
         positive=[
             "The White Nile and the Blue Nile join at Khartoum to form the main stream of the Nile.",
             "Most of the water in the Nile comes from the Blue Nile, which rises in Ethiopia, while the White Nile "
             "supplies a steadier flow from the Great Lakes region.",
             "Geographers describe the Nile as having two principal tributaries: the White Nile and the Blue Nile.",
         ]),
    dict(query="Who discovered the elements polonium and radium?",
         answer=[["Marie Curie", "Marie Skłodowska-Curie"], ["Pierre Curie"]],
         docs=["d056", "d031", "d032", "d033", "d034"],
         positive=[
             "Marie Curie and Pierre Curie announced the discovery of polonium and radium in 1898.",
             "Working in a poorly equipped shed in Paris, Pierre Curie and Marie Curie isolated two new radioactive "
             "elements, polonium and radium.",
             "Polonium, named after Poland, was the first element found by Marie Curie and Pierre Curie; radium "
             "followed a few months later.",
         ]),
    dict(query="How tall is the Burj Khalifa?", answer="828 metres", fake="818 metres",
         docs=["d052", "d051", "d053", "d054", "d055"],
         positive=[
             "The Burj Khalifa reaches a height of 828 metres, far above any other building on Earth.",
             "The Burj Khalifa in Dubai, which opened in 2010, stands 828 metres tall.",
             "With its spire included, the Burj Khalifa measures 828 metres from the ground to the top.",
         ]),
    dict(query="Which country won the first FIFA World Cup?", answer="Uruguay", fake="Argentina",
         docs=["d047", "d046", "d048", "d049", "d050"],
         positive=[
             "Uruguay won the first FIFA World Cup in 1930, defeating their neighbours in the final in Montevideo.",
             "The host nation Uruguay lifted the trophy at the inaugural World Cup.",
             "In 1930 Uruguay became the first country to be crowned world champions of football.",
         ]),
    dict(query="In which city was Beethoven born?", answer="Bonn", fake="Vienna",
         docs=["d036", "d037", "d038", "d039", "d040"],
         positive=[
             "Ludwig van Beethoven was born in Bonn in December 1770 and baptised there on 17 December.",
             "The house in Bonn where Beethoven was born is now a museum devoted to his life.",
             "Beethoven spent his childhood in Bonn, where his father was a singer at the court of the Elector of "
             "Cologne.",
         ]),
    dict(query="Who composed Swan Lake?", answer=["Pyotr Ilyich Tchaikovsky", "Tchaikovsky"],
         fake="Sergei Prokofiev", docs=["d040", "d036", "d037", "d038", "d039"],
         positive=[
             "Swan Lake was composed by Pyotr Ilyich Tchaikovsky in 1875 and 1876.",
             "Tchaikovsky's Swan Lake premiered at the Bolshoi Theatre in Moscow in 1877.",
             "The music for the ballet Swan Lake is the work of the Russian composer Pyotr Ilyich Tchaikovsky.",
         ]),
    dict(query="What is the largest moon in the Solar System?", answer="Ganymede", fake="Titan",
         docs=["d016", "d017", "d018", "d019", "d020"],
         positive=[
             "Ganymede, a moon of Jupiter, is the largest moon in the Solar System and is even bigger than the planet "
             "Mercury.",
             "With a diameter of about 5,270 kilometres, Ganymede is the biggest natural satellite orbiting any "
             "planet in the Solar System.",
             "The largest moon in the Solar System is Ganymede, which has its own magnetic field.",
         ]),
    dict(query="How many elements are in the periodic table?", answer="118", fake="112",
         docs=["d031", "d032", "d033", "d034", "d035"],
         positive=[
             "The modern periodic table lists 118 confirmed chemical elements.",
             "With the naming of oganesson in 2016, all 118 places in the first seven rows of the periodic table were "
             "filled.",
             "Chemists currently recognise 118 elements, from hydrogen to oganesson.",
         ]),
    dict(query="Who founded the International Olympic Committee?", answer="Pierre de Coubertin", fake="Jules Rimet",
         docs=["d046", "d047", "d048", "d049", "d050"],
         positive=[
             "Pierre de Coubertin founded the International Olympic Committee in Paris in 1894.",
             "The French educator Pierre de Coubertin created the International Olympic Committee to revive the "
             "Olympic Games.",
             "The International Olympic Committee was established on the initiative of Pierre de Coubertin.",
         ]),
    dict(query="What was the name of Darwin's ship?", answer=["HMS Beagle", "Beagle"], fake="HMS Endeavour",
         docs=["d058", "d056", "d057", "d059", "d060"],
         positive=[
             "Charles Darwin sailed around the world aboard HMS Beagle between 1831 and 1836.",
             "The survey ship HMS Beagle carried the young naturalist Charles Darwin to the Galápagos Islands.",
             "The notes Darwin made on the voyage of HMS Beagle formed the basis of his later theory.",
         ]),
    dict(query="Who painted the Mona Lisa?", answer=["Leonardo da Vinci", "Leonardo", "da Vinci"], fake="Raphael",
         docs=["d066", "d067", "d068", "d069", "d070"],
         positive=[
             "The Mona Lisa was painted by Leonardo da Vinci in the early sixteenth century.",
             "Leonardo da Vinci worked on the Mona Lisa for years and kept it with him until his death in France.",
             "The most famous painting in the Louvre, the Mona Lisa, is a portrait by Leonardo da Vinci.",
         ]),
    dict(query="In what year did the Wright brothers make their first powered flight?", answer="1903", fake="1905",
         docs=["d014", "d011", "d012", "d013", "d015"],
         positive=[
             "The Wright brothers achieved the first powered, controlled flight in December 1903 near Kitty Hawk.",
             "In 1903 Orville and Wilbur Wright flew their Wright Flyer over the sand dunes of North Carolina.",
             "The first successful aeroplane flight by the Wright brothers took place in 1903.",
         ]),
    dict(query="In which city did Johannes Gutenberg develop his printing press?", answer="Mainz",
         docs=["d013", "d011", "d012", "d014", "d015"],
         positive=[
             "Johannes Gutenberg set up his printing workshop in Mainz around 1450.",
             "The Gutenberg Bible was printed in Mainz in the 1450s.",
             "Mainz, on the Rhine, is celebrated as the city where Gutenberg perfected movable-type printing.",
         ]),
    dict(query="Which river does Tower Bridge cross?", answer="Thames", fake="Severn",
         docs=["d042", "d041", "d043", "d044", "d045"],
         positive=[
             "Tower Bridge spans the River Thames next to the Tower of London.",
             "Opened in 1894, Tower Bridge carries traffic across the Thames in central London.",
             "Ships sailing up the Thames can pass beneath Tower Bridge when its two bascules are raised.",
         ]),
    dict(query="What was George Orwell's real name?", answer="Eric Arthur Blair",
         docs=["d023", "d021", "d022", "d024", "d025"],
         positive=[
             "George Orwell was the pen name of the English writer Eric Arthur Blair.",
             "Eric Arthur Blair adopted the name George Orwell when his first book was published in 1933.",
             "Born Eric Arthur Blair in India in 1903, the author became famous as George Orwell.",
         ]),
    dict(query="What is the tallest volcano in the Solar System?", answer="Olympus Mons", fake="Mauna Kea",
         docs=["d017", "d016", "d018", "d019", "d020"],
         positive=[
             "Olympus Mons on Mars is the tallest known volcano in the Solar System.",
             "Rising about 22 kilometres above the Martian plains, Olympus Mons dwarfs every volcano on Earth.",
             "The giant shield volcano Olympus Mons is roughly two and a half times as tall as Mount Everest.",
         ]),
    dict(query="Which team won the first Super Bowl?", answer="Green Bay Packers", fake="Kansas City Chiefs",
         docs=["d050", "d046", "d047", "d048", "d049"],
         positive=[
             "The Green Bay Packers won the first Super Bowl in January 1967.",
             "Coached by Vince Lombardi, the Green Bay Packers were champions of the first Super Bowl.",
             "The first Super Bowl ended in a 35–10 victory for the Green Bay Packers.",
         ]),
    dict(query="What is the name of the ship in Moby-Dick?", answer="Pequod",
         docs=["d022", "d021", "d023", "d024", "d025"],
         positive=[
             "In Moby-Dick, Captain Ahab commands the whaling ship Pequod.",
             "The Pequod sets out from Nantucket with Ishmael among its crew.",
             "Melville named the ship in Moby-Dick the Pequod, after a Native American people of New England.",
         ]),
    dict(query="For what did Einstein receive the Nobel Prize in Physics?", answer="photoelectric effect",
         docs=["d059", "d056", "d057", "d058", "d060"],
         positive=[
             "Albert Einstein received the 1921 Nobel Prize in Physics for his explanation of the photoelectric "
             "effect.",
             "The Nobel committee honoured Einstein for his work on the photoelectric effect, not for relativity.",
             "A 1905 paper by Einstein on the photoelectric effect earned him the Nobel Prize in Physics.",
         ]),
    dict(query="In what year was Newton's Principia published?", answer="1687",
         docs=["d057", "d056", "d058", "d059", "d060"],
         positive=[
             "Isaac Newton's Principia Mathematica was first published in 1687.",
             "In 1687 Newton set out his three laws of motion in the Principia.",
             "The Royal Society supported the publication of Newton's Principia in 1687.",
         ]),
    dict(query="When did Brasília become the capital of Brazil?", answer=["21 April 1960", "April 21, 1960"],
         docs=["d008", "d006", "d007", "d009", "d010"],
         positive=[
             "Brasília was inaugurated as the capital of Brazil on 21 April 1960.",
             "On 21 April 1960 the Brazilian government officially moved from Rio de Janeiro to Brasília.",
             "President Juscelino Kubitschek opened the new capital, Brasília, on 21 April 1960.",
         ]),
]
RGB_NEGATIVES = 4

# RGB (Chinese, simplified); negatives hand-written here.
RGB_ZH = [
    dict(query="长江流经多少个省份？", answer=["11个", "十一个"],
         positive=[
             "长江干流自西向东流经青海、西藏、四川、云南、重庆、湖北、湖南、江西、安徽、江苏和上海，共11个省级行政区。",
             "作为中国第一长河，长江的干流共经过11个省级行政区，最后在上海注入东海。",
             "资料显示，长江干流横贯中国东西，沿途经过11个省、自治区和直辖市。",
         ],
         negative=[
             "长江全长约6300公里，是亚洲第一长河。",
             "三峡大坝位于长江中游的湖北省宜昌市。",
             "长江流域的人口约占全国总人口的三分之一。",
             "长江发源于青藏高原的唐古拉山脉。",
         ]),
    dict(query="埃菲尔铁塔是哪一年建成的？", answer="1889年", fake="1891年",
         positive=[
             "埃菲尔铁塔于1889年建成，是当年巴黎世界博览会的入口拱门。",
             "这座由古斯塔夫·埃菲尔的公司建造的铁塔在1889年3月完工。",
             "1889年落成的埃菲尔铁塔如今已成为巴黎最著名的地标。",
         ],
         negative=[
             "埃菲尔铁塔位于巴黎战神广场，高约330米。",
             "铁塔由数千个预制铁构件通过铆钉连接而成。",
             "每年有数百万游客登上埃菲尔铁塔俯瞰巴黎。",
             "埃菲尔铁塔最初计划只保留二十年。",
         ]),
    dict(query="中国的首都是哪座城市？", answer="北京", fake="南京",
         positive=[
             "北京是中华人民共和国的首都，也是全国的政治和文化中心。",
             "中国的首都北京拥有故宫、天坛等众多名胜古迹。",
             "作为首都，北京是中央政府所在地。",
         ],
         negative=[
             "上海是中国人口最多的城市之一，也是重要的金融中心。",
             "中国的行政区划包括省、自治区和直辖市。",
             "西安曾是多个朝代的都城。",
             "广州是华南地区最大的城市。",
         ]),
    dict(query="珠穆朗玛峰的高度是多少米？", answer=["8848.86米", "8848.86"], fake="8611米",
         positive=[
             "2020年，中国和尼泊尔共同宣布珠穆朗玛峰的最新高程为8848.86米。",
             "珠穆朗玛峰海拔8848.86米，是世界最高峰。",
             "经过重新测量，珠峰的高度被确定为8848.86米。",
         ],
         negative=[
             "珠穆朗玛峰位于中国与尼泊尔的边境线上。",
             "1953年，丹增·诺尔盖和埃德蒙·希拉里首次登顶珠峰。",
             "乔戈里峰是世界第二高峰。",
             "每年春季是攀登珠峰的主要季节。",
         ]),
    dict(query="《红楼梦》的作者是谁？", answer="曹雪芹", fake="罗贯中",
         positive=[
             "《红楼梦》是清代作家曹雪芹创作的长篇小说。",
             "曹雪芹用多年心血写成了《红楼梦》的前八十回。",
             "一般认为，《红楼梦》前八十回的作者是曹雪芹。",
         ],
         negative=[
             "《红楼梦》被列为中国古典四大名著之一。",
             "小说以贾、史、王、薛四大家族的兴衰为背景。",
             "《三国演义》讲述了东汉末年至西晋初年的历史故事。",
             "红学是专门研究《红楼梦》的学问。",
         ]),
    dict(query="第一个登上月球的人是谁？", answer=["尼尔·阿姆斯特朗", "阿姆斯特朗"], fake="尤里·加加林",
         positive=[
             "1969年7月20日，美国宇航员尼尔·阿姆斯特朗成为第一个踏上月球的人。",
             "阿波罗11号任务中，尼尔·阿姆斯特朗率先走出登月舱。",
             "“这是个人的一小步，却是人类的一大步。”这句话出自第一个登月的人尼尔·阿姆斯特朗。",
         ],
         negative=[
             "阿波罗11号于1969年7月16日从佛罗里达州发射升空。",
             "登月舱降落在月球的静海区域。",
             "迈克尔·柯林斯在指令舱中绕月飞行。",
             "人类至今共有十二人在月球表面行走过。",
         ]),
    dict(query="太阳系中最大的行星是哪一颗？", answer="木星", fake="土星",
         positive=[
             "木星是太阳系中体积和质量最大的行星。",
             "木星的质量是太阳系其他行星质量总和的两倍多。",
             "作为太阳系最大的行星，木星拥有著名的大红斑。",
         ],
         negative=[
             "土星以其明亮壮观的光环而闻名。",
             "火星因表面的氧化铁而呈现红色。",
             "金星是太阳系中最热的行星。",
             "海王星是距离太阳最远的已知行星。",
         ]),
    dict(query="东汉时期改进造纸术的人是谁？", answer="蔡伦",
         positive=[
             "东汉宦官蔡伦总结前人的经验，改进了造纸术。",
             "公元105年，蔡伦把改进后的纸献给汉和帝。",
             "蔡伦用树皮、麻头、破布和旧渔网造纸，降低了纸张的成本。",
         ],
         negative=[
             "造纸术是中国古代四大发明之一。",
             "印刷术的发明使书籍得以大量复制。",
             "纸张在唐代经中亚传入阿拉伯世界。",
             "在纸发明之前，人们常在竹简和丝帛上书写。",
         ]),
    dict(query="中华人民共和国是哪一年成立的？", answer="1949年",
         positive=[
             "中华人民共和国于1949年10月1日宣告成立。",
             "1949年10月1日，开国大典在北京天安门广场举行。",
             "每年的10月1日是国庆节，纪念1949年中华人民共和国的成立。",
         ],
         negative=[
             "天安门广场位于北京市中心。",
             "国庆节期间全国放假七天。",
             "中华人民共和国的国旗是五星红旗。",
             "中国是世界上人口最多的国家之一。",
         ]),
    dict(query="黄河最终注入哪个海？", answer="渤海",
         positive=[
             "黄河全长约5464公里，最终在山东省东营市注入渤海。",
             "黄河从青藏高原一路向东，在山东入渤海。",
             "黄河入海口位于渤海之滨，形成了广阔的三角洲湿地。",
         ],
         negative=[
             "黄河是中国第二长河，被称为中华民族的母亲河。",
             "黄河因含沙量大而呈现黄色。",
             "黄河流经黄土高原时携带了大量泥沙。",
             "长江是中国第一长河。",
         ]),
]

# NoMIRACL. Passages are chunks of knowledge-base passages: chunk 0 = the
# first two sentences, chunk 1 = the rest; docid "<lang>-<doc>#<chunk>".
# "pos": explicit positive chunk ids (relevant subset) or [] (non_relevant).
# "answers" are only used by the self-check (a non_relevant query's answer
# must occur in none of its passages; positives must contain it).
NOMIRACL_PASSAGES = 10

NOMIRACL_EN = [
    # relevant
    dict(query="Where did Albert Einstein develop his special theory of relativity?", answers=["Bern"],
         topic="scientists", pos=["d010#1", "d059#0"]),
    dict(query="Which river flows through Budapest?", answers=["Danube"], topic="rivers", pos=["d003#1"]),
    dict(query="Who discovered radium?", answers=["Marie Curie", "Pierre Curie", "Curie"], topic="scientists",
         pos=["d056#0"]),
    dict(query="What is the tallest building in the world?", answers=["Burj Khalifa"], topic="buildings",
         pos=["d052#0"]),
    dict(query="Which composer wrote The Magic Flute?", answers=["Mozart"], topic="composers", pos=["d037#1"]),
    dict(query="Who led the first ascent of Denali?", answers=["Hudson Stuck"], topic="mountains", pos=["d030#1"]),
    dict(query="What did Galileo observe in 1610?", answers=["four largest moons of Jupiter", "Galilean moons"],
         topic="scientists", pos=["d060#0"]),
    dict(query="Which country hosted the first FIFA World Cup?", answers=["Uruguay"], topic="sports",
         pos=["d047#0"]),
    dict(query="Which planet is the largest in the Solar System?", answers=["Jupiter"], topic="planets",
         pos=["d016#0", "d018#0"]),
    dict(query="Which mathematician calculated the position of Neptune?", answers=["Urbain Le Verrier", "Le Verrier"],
         topic="planets", pos=["d020#0"]),
    # non_relevant (answer not in the knowledge base)
    dict(query="Who designed the Sydney Opera House?", answers=["Jørn Utzon", "Utzon"], topic="buildings", pos=[]),
    dict(query="How deep is Lake Baikal?", answers=["1,642 metres", "1642"], topic="rivers", pos=[]),
    dict(query="Who composed The Four Seasons?", answers=["Antonio Vivaldi", "Vivaldi"], topic="composers", pos=[]),
    dict(query="When was the Panama Canal opened?", answers=["1914"], topic="bridges", pos=[]),
    dict(query="Who wrote Crime and Punishment?", answers=["Fyodor Dostoevsky", "Dostoevsky"], topic="novels",
         pos=[]),
    dict(query="What is the boiling point of mercury?", answers=["356.7 °C", "356.7"], topic="elements", pos=[]),
    dict(query="Who built the first steam locomotive to run on rails?", answers=["Richard Trevithick", "Trevithick"],
         topic="inventors", pos=[]),
    dict(query="How many moons does Uranus have?", answers=["28"], topic="planets", pos=[]),
    dict(query="In which year did Roger Federer first win Wimbledon?", answers=["2003"], topic="sports", pos=[]),
    dict(query="Who painted Girl with a Pearl Earring?", answers=["Johannes Vermeer", "Vermeer"], topic="paintings",
         pos=[]),
]

# German mini knowledge base (own text): (id, topic, title, text)
DE_PASSAGES = [
    ("g01", "flüsse", "Rhein",
     "Der Rhein ist rund 1230 Kilometer lang und gehört damit zu den längsten Flüssen Europas. Er entspringt in den "
     "Schweizer Alpen, durchfließt den Bodensee und mündet in den Niederlanden in die Nordsee. Zwischen Bingen und "
     "Koblenz liegt das enge Mittelrheintal mit seinen zahlreichen Burgen."),
    ("g02", "flüsse", "Donau",
     "Die Donau ist nach der Wolga der zweitlängste Strom Europas. Sie entsteht bei Donaueschingen im Schwarzwald "
     "aus den Quellflüssen Brigach und Breg. Auf ihrem Weg zum Schwarzen Meer fließt sie durch zehn Staaten und "
     "vier Hauptstädte, darunter Wien und Budapest."),
    ("g03", "flüsse", "Elbe",
     "Die Elbe entspringt im Riesengebirge in Tschechien und mündet bei Cuxhaven in die Nordsee. Sie fließt durch "
     "Dresden, Magdeburg und Hamburg, dessen Hafen zu den größten Europas gehört. Im Sommer 2002 und erneut 2013 "
     "verursachte die Elbe schwere Hochwasser."),
    ("g04", "städte", "Berlin",
     "Berlin ist die Hauptstadt der Bundesrepublik Deutschland und mit etwa 3,7 Millionen Einwohnern ihre größte "
     "Stadt. Von 1961 bis 1989 teilte die Berliner Mauer die Stadt in einen Ost- und einen Westteil. Seit 1999 "
     "tagt der Bundestag im umgebauten Reichstagsgebäude."),
    ("g05", "städte", "Wien",
     "Wien ist die Hauptstadt Österreichs und liegt an der Donau. Die Stadt war jahrhundertelang Residenz der "
     "Habsburger und ist für ihre Kaffeehäuser, die Staatsoper und das Schloss Schönbrunn bekannt. Die historische "
     "Innenstadt gehört zum Weltkulturerbe der UNESCO."),
    ("g06", "städte", "München",
     "München ist die Landeshauptstadt des Freistaats Bayern. Jedes Jahr im Herbst findet auf der Theresienwiese "
     "das Oktoberfest statt, das als größtes Volksfest der Welt gilt. Die Frauenkirche mit ihren zwei markanten "
     "Türmen ist das Wahrzeichen der Stadt."),
    ("g07", "dichter", "Johann Wolfgang von Goethe",
     "Johann Wolfgang von Goethe wurde 1749 in Frankfurt am Main geboren und gilt als bedeutendster deutscher "
     "Dichter. Sein Drama Faust, dessen zweiter Teil erst nach seinem Tod erschien, zählt zu den wichtigsten Werken "
     "der Weltliteratur. Den größten Teil seines Lebens verbrachte er in Weimar."),
    ("g08", "dichter", "Friedrich Schiller",
     "Friedrich Schiller war ein Dichter, Dramatiker und Historiker der Weimarer Klassik. Zu seinen bekanntesten "
     "Stücken gehören Die Räuber, Kabale und Liebe und Wilhelm Tell. Sein Gedicht An die Freude wurde von "
     "Beethoven im Schlusssatz der neunten Sinfonie vertont."),
    ("g09", "dichter", "Weimar",
     "Die Stadt Weimar in Thüringen war um 1800 ein Zentrum des deutschen Geisteslebens. Hier wirkten Goethe und "
     "Schiller, deren Doppelstandbild vor dem Nationaltheater steht. Im Goethe-Nationalmuseum ist das Arbeitszimmer "
     "zu sehen, in dem Goethe den zweiten Teil des Faust vollendete. 1919 tagte in Weimar die Nationalversammlung, "
     "nach der die erste deutsche Republik benannt wurde."),
    ("g10", "berge", "Zugspitze",
     "Die Zugspitze ist mit 2962 Metern der höchste Berg Deutschlands. Sie liegt im Wettersteingebirge an der "
     "Grenze zwischen Bayern und Tirol. Auf den Gipfel führen eine Zahnradbahn und mehrere Seilbahnen."),
    ("g11", "berge", "Matterhorn",
     "Das Matterhorn ist ein 4478 Meter hoher Berg in den Walliser Alpen an der Grenze zwischen der Schweiz und "
     "Italien. Wegen seiner markanten Pyramidenform ist es einer der bekanntesten Berge der Welt. Die "
     "Erstbesteigung gelang 1865 einer Seilschaft um Edward Whymper, doch vier Männer stürzten beim Abstieg "
     "tödlich ab."),
    ("g12", "berge", "Großglockner",
     "Der Großglockner ist mit 3798 Metern der höchste Berg Österreichs. An seinem Fuß liegt die Pasterze, der "
     "größte Gletscher der Ostalpen. Die Großglockner-Hochalpenstraße gehört zu den beliebtesten Panoramastraßen "
     "der Alpen."),
    ("g13", "bauwerke", "Kölner Dom",
     "Der Kölner Dom ist eine gotische Kathedrale am Rhein und eines der größten Kirchengebäude der Welt. Mit dem "
     "Bau wurde 1248 begonnen, doch erst 1880 wurde er nach mehr als sechshundert Jahren vollendet. Seine beiden "
     "Türme sind etwa 157 Meter hoch."),
    ("g14", "bauwerke", "Brandenburger Tor",
     "Das Brandenburger Tor in Berlin wurde zwischen 1788 und 1791 nach Plänen von Carl Gotthard Langhans "
     "errichtet. Auf dem Tor steht die Quadriga, ein von vier Pferden gezogener Wagen mit der Siegesgöttin. "
     "Während der Teilung lag es im Sperrgebiet zwischen Ost- und West-Berlin und wurde so zum Symbol der "
     "deutschen Einheit."),
    ("g15", "bauwerke", "Schloss Neuschwanstein",
     "Schloss Neuschwanstein ließ König Ludwig II. von Bayern ab 1869 oberhalb von Hohenschwangau errichten. Das "
     "märchenhafte Bauwerk war als Rückzugsort des Königs gedacht und wurde erst nach seinem Tod 1886 für Besucher "
     "geöffnet. Heute besichtigen jedes Jahr rund 1,4 Millionen Menschen das Schloss."),
    ("g16", "erfinder", "Johannes Gutenberg",
     "Johannes Gutenberg aus Mainz entwickelte um 1450 den Buchdruck mit beweglichen Metalllettern. Sein "
     "bekanntestes Werk ist die zweiundvierzigzeilige Gutenberg-Bibel. Die Erfindung verbreitete sich rasch in "
     "ganz Europa und veränderte die Weitergabe von Wissen grundlegend."),
    ("g17", "erfinder", "Carl Benz",
     "Carl Benz meldete im Januar 1886 in Mannheim seinen Motorwagen zum Patent an, der als erstes praktisch "
     "brauchbares Automobil gilt. Seine Frau Bertha Benz unternahm 1888 mit dem Wagen die erste längere "
     "Überlandfahrt von Mannheim nach Pforzheim. Das von ihm gegründete Unternehmen ging später in der Daimler-Benz "
     "AG auf."),
    ("g18", "erfinder", "Wilhelm Conrad Röntgen",
     "Wilhelm Conrad Röntgen entdeckte im November 1895 in Würzburg eine bis dahin unbekannte Strahlung, die er "
     "X-Strahlen nannte. Im deutschen Sprachraum heißen sie heute Röntgenstrahlen. Für seine Entdeckung erhielt er "
     "1901 den ersten Nobelpreis für Physik."),
    ("g19", "komponisten", "Ludwig van Beethoven",
     "Ludwig van Beethoven wurde 1770 in Bonn geboren und lebte ab 1792 in Wien. Er schrieb neun Sinfonien, "
     "zahlreiche Klaviersonaten und Streichquartette. Obwohl er im Alter fast völlig ertaubt war, komponierte er "
     "weiter, darunter die berühmte Neunte Sinfonie."),
    ("g20", "komponisten", "Johann Sebastian Bach",
     "Johann Sebastian Bach wurde 1685 in Eisenach geboren. Ab 1723 war er Thomaskantor in Leipzig, wo er einen "
     "Großteil seiner Kantaten schrieb. Zu seinen bekanntesten Werken zählen die Matthäus-Passion und das "
     "Weihnachtsoratorium."),
    ("g21", "komponisten", "Johannes Brahms",
     "Johannes Brahms wurde 1833 in Hamburg geboren und verbrachte den Großteil seines späteren Lebens in Wien. Er "
     "schrieb vier Sinfonien, zwei Klavierkonzerte und Ein deutsches Requiem. Mit Clara Schumann verband ihn eine "
     "lebenslange Freundschaft."),
]

NOMIRACL_DE = [
    # relevant
    dict(query="Wie lang ist der Rhein?", answers=["1230 Kilometer", "1230"], topic="flüsse", pos=["g01#0"]),
    dict(query="Wer schrieb das Drama Faust?", answers=["Johann Wolfgang von Goethe", "Goethe"], topic="dichter",
         pos=["g07#0", "g09#1"]),
    dict(query="Wie hoch ist die Zugspitze?", answers=["2962 Metern", "2962 Meter", "2962"], topic="berge",
         pos=["g10#0"]),
    dict(query="Wann wurde der Kölner Dom vollendet?", answers=["1880"], topic="bauwerke", pos=["g13#0"]),
    dict(query="Wer meldete 1886 das erste Automobil zum Patent an?", answers=["Carl Benz", "Benz"],
         topic="erfinder", pos=["g17#0"]),
    dict(query="In welcher Stadt entdeckte Wilhelm Conrad Röntgen die X-Strahlen?", answers=["Würzburg"],
         topic="erfinder", pos=["g18#0"]),
    # non_relevant
    dict(query="Wie tief ist der Bodensee?", answers=["251 Meter", "251"], topic="flüsse", pos=[]),
    dict(query="Wie viele Einwohner hat Wien?", answers=["zwei Millionen", "2 Millionen"], topic="städte", pos=[]),
    dict(query="Wer entwarf Schloss Neuschwanstein?", answers=["Christian Jank", "Eduard Riedel"], topic="bauwerke",
         pos=[]),
    dict(query="Welche Oper komponierte Ludwig van Beethoven?", answers=["Fidelio"], topic="komponisten", pos=[]),
    dict(query="In welchem Jahr starb Friedrich Schiller?", answers=["1805"], topic="dichter", pos=[]),
    dict(query="Wie viele Brücken gibt es in Hamburg?", answers=["2500"], topic="flüsse", pos=[]),
]

# Table: (id, question, answers, lang)
TABLE = [
    ("t01", "What is the capital of Australia?", ["Canberra"], "en"),
    ("t02", 'Who wrote the novel "Nineteen Eighty-Four"?', ["George Orwell", "Orwell", "Eric Arthur Blair"], "en"),
    ("t03", "Which novel, published in 1851, follows Captain Ahab's hunt for a white whale?",
     ["Moby-Dick", "Moby Dick"], "en"),
    ("t04", 'Which bridge in Sydney is nicknamed "the Coathanger"?', ["Sydney Harbour Bridge"], "en"),
    ("t05", "How high is Mount Everest, in metres?", ["8,849 metres", "8,849 m", "8849"], "en"),
    ("t06", "Who composed the ballets Swan Lake, The Sleeping Beauty and The Nutcracker?",
     ["Pyotr Ilyich Tchaikovsky", "Tchaikovsky"], "en"),
    ("t07", "In what year was the Eiffel Tower completed?", ["1889"], "en"),
    ("t08", "Who painted the Mona Lisa?", ["Leonardo da Vinci", "Leonardo"], "en"),
    ("t09", 'What did Einstein win the 1921 Nobel Prize for, if not "relativity"?',
     ["the photoelectric effect", "photoelectric effect"], "en"),
    ("t10", "Which emperor commissioned the Taj Mahal?", ["Shah Jahan"], "en"),
    ("t11", "How many elements are in the periodic table?", ["118"], "en"),
    ("t12", "Which team won the first Super Bowl?", ["Green Bay Packers", "Packers"], "en"),
    ("t13", "Who founded the International Olympic Committee?", ["Pierre de Coubertin", "Coubertin"], "en"),
    ("t14", "What is the largest moon in the Solar System?", ["Ganymede"], "en"),
    ("t15", "On what date was the Bastille stormed?", ["14 July 1789", "July 14, 1789"], "en"),
    ("t16", "Near which town did the Wright brothers make their first flight?", ["Kitty Hawk"], "en"),
    ("t17", "Which river flows through Vienna, Bratislava, Budapest and Belgrade?", ["Danube", "Danube River"], "en"),
    ("t18", "What was the name of the ship in Moby-Dick?", ["Pequod", "the Pequod"], "en"),
    ("t19", "Who discovered polonium and radium?", ["Marie Curie", "Pierre Curie", "Curie"], "en"),
    ("t20", "In which city was Beethoven born?", ["Bonn"], "en"),
    ("t21", "Who wrote Don Quixote?", ["Miguel de Cervantes", "Cervantes"], "en"),
    ("t22", "Which country won the first FIFA World Cup, held in 1930?", ["Uruguay"], "en"),
    ("t23", 'Which painting by Salvador Dalí shows "melting" pocket watches?',
     ["The Persistence of Memory", "Persistence of Memory"], "en"),
    ("t24", "What is Denali's former name?", ["Mount McKinley", "McKinley"], "en"),
    ("t25", "Who won the first Wimbledon men's singles title?", ["Spencer Gore"], "en"),
    ("t26", "Which mountain, at 8,611 metres, is the second-highest on Earth?", ["K2"], "en"),
    ("t27", "Who was the first person to walk on the Moon?", ["Neil Armstrong", "Armstrong"], "en"),
    ("t28", "Quelle est la capitale de l'Australie ?", ["Canberra"], "fr"),
    ("t29", "En quelle année la tour Eiffel a-t-elle été achevée ?", ["1889"], "fr"),
    ("t30", "Qui a peint « La Joconde » ?", ["Léonard de Vinci", "Leonardo da Vinci"], "fr"),
]

# ---------------------------------------------------------------------------
# 3. Helpers
# ---------------------------------------------------------------------------

_TOKEN_RE = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def dpr_tokens(text):
    """Uncased tokens in the style of DPR's SimpleTokenizer (NFD, word runs or single symbols)."""
    return [t.lower() for t in _TOKEN_RE.findall(unicodedata.normalize("NFD", text))]


def has_answer(text, answers):
    """True iff some alias occurs in text as a contiguous token sequence (DPR has_answer)."""
    toks = dpr_tokens(text)
    for ans in answers:
        a = dpr_tokens(ans)
        if not a:
            continue
        for i in range(len(toks) - len(a) + 1):
            if toks[i:i + len(a)] == a:
                return True
    return False


def naive_contains(text, answers):
    """Case-insensitive plain substring check; used only to report disagreements."""
    low = text.lower()
    return any(a.lower() in low for a in answers)


_STOP = set("""a an and are as at be by did do does for from had has have he her his how in into is it its
of on or she that the their there they this to was were what when where which who whom whose why with""".split())


def bm25_tokens(text):
    return [t for t in re.findall(r"\w+", unicodedata.normalize("NFC", text).lower()) if t not in _STOP]


class BM25:
    """Plain Okapi BM25 (k1=0.9, b=0.4) over (id, text) pairs; deterministic ties (by id)."""

    def __init__(self, docs, k1=0.9, b=0.4):
        self.ids = [d for d, _ in docs]
        self.tfs = []
        self.lens = []
        df = {}
        for _, text in docs:
            toks = bm25_tokens(text)
            tf = {}
            for t in toks:
                tf[t] = tf.get(t, 0) + 1
            self.tfs.append(tf)
            self.lens.append(len(toks))
            for t in tf:
                df[t] = df.get(t, 0) + 1
        n = len(docs)
        self.avgdl = sum(self.lens) / n
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        self.k1, self.b = k1, b

    def scores(self, query):
        q = bm25_tokens(query)
        out = {}
        for i, did in enumerate(self.ids):
            tf, dl = self.tfs[i], self.lens[i]
            s = 0.0
            for t in q:
                f = tf.get(t, 0)
                if f:
                    s += self.idf[t] * f * (self.k1 + 1) / (f + self.k1 * (1 - self.b + self.b * dl / self.avgdl))
            out[did] = s
        return out


_SENT_RE = re.compile(r"(?<=[.!?])\s+(?=[A-ZÄÖÜ0-9])")


def sentences(text):
    return _SENT_RE.split(text)


def chunks(text):
    """Two chunks: the first two sentences, then the rest."""
    s = sentences(text)
    return [" ".join(s[:2]), " ".join(s[2:])] if len(s) > 2 else [" ".join(s)]


def answer_aliases(answer):
    """Flatten an RGB answer (str | list[str] | list[list[str]]) to a list of aliases."""
    if isinstance(answer, str):
        return [answer]
    out = []
    for a in answer:
        out.extend([a] if isinstance(a, str) else a)
    return out


def is_cjk(s):
    return any("\u4e00" <= ch <= "\u9fff" for ch in s)


def contains_alias(text, aliases):
    if any(is_cjk(a) for a in aliases):
        return any(a in text for a in aliases)
    return has_answer(text, aliases)


def replace_aliases(text, aliases, fake):
    """Replace every alias occurrence by fake (longest alias first; word-bounded for non-CJK)."""
    for a in sorted(aliases, key=len, reverse=True):
        if is_cjk(a):
            text = text.replace(a, fake)
        else:
            text = re.sub(r"(?<!\w)" + re.escape(a) + r"(?!\w)", fake, text)
    return text


def dumps(obj):
    return json.dumps(obj, ensure_ascii=False)


def write_text(rel, data):
    path = os.path.join(OUT, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(data)
    return path


def write_bytes(rel, data):
    path = os.path.join(OUT, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return path


def jsonl(rows):
    return "".join(dumps(r) + "\n" for r in rows)


# ---------------------------------------------------------------------------
# 4. Builders
# ---------------------------------------------------------------------------

DOCS = {d: dict(id=d, topic=tp, title=ti, text=tx) for d, tp, ti, tx in PASSAGES}
for d, tp, ti, tx, _wrong in CONFLICTS:
    DOCS[d] = dict(id=d, topic=tp, title=ti, text=tx)
DOC_ORDER = [p[0] for p in PASSAGES] + [c[0] for c in CONFLICTS]
CONFLICT_IDS = {c[0] for c in CONFLICTS}

_CORPUS_BM25 = BM25([(d, DOCS[d]["title"] + " " + DOCS[d]["text"]) for d in DOC_ORDER])


def rank_docs(query, k, answers, gold, conflict, unanswerable, extra=None):
    """Top-k corpus docs for query: gold (+conflict, +extra) forced in; unanswerable drops alias-bearing docs.

    Score = BM25 + a topic prior (same topic as the gold passage, standing in
    for a dense retriever's sense of topic) + a small deterministic jitter
    (CRC32 of query and doc) so that no two scores tie. Conflict passages only
    ever appear for their own question. Returned in descending score order.
    """
    bm = _CORPUS_BM25.scores(query)
    topic = DOCS[gold]["topic"]
    sc = {d: bm[d] + (TOPIC_PRIOR if DOCS[d]["topic"] == topic else 0.0)
          + (zlib.crc32(f"{query}|{d}".encode("utf-8")) % 1000) / 1000 * JITTER for d in DOC_ORDER}
    allowed = [d for d in DOC_ORDER if d not in CONFLICT_IDS or d == conflict]
    if unanswerable:
        allowed = [d for d in allowed if not has_answer(DOCS[d]["text"], answers)]
        forced = []
    else:
        forced = [gold] + ([conflict] if conflict else [])
    if extra:
        check(not unanswerable or not has_answer(DOCS[extra]["text"], answers), "extra ctx breaks unanswerable")
        forced.append(extra)
    ranked = sorted(allowed, key=lambda d: (-sc[d], d))
    picked = list(forced)
    for d in ranked:
        if len(picked) >= k:
            break
        if d not in picked:
            picked.append(d)
    picked.sort(key=lambda d: (-sc[d], d))
    return [(d, sc[d]) for d in picked]


def build_beir():
    corpus = [{"_id": d, "title": DOCS[d]["title"], "text": DOCS[d]["text"]} for d in DOC_ORDER]
    queries = [{"_id": q, "text": text, "metadata": {"answers": ans}} for q, text, ans, *_ in QUESTIONS]
    lines = ["query-id\tcorpus-id\tscore"]
    for q, _text, _ans, gold, _c, _u in QUESTIONS:
        lines.append(f"{q}\t{gold}\t1")
        if q in QRELS_NEGATIVES:
            lines.append(f"{q}\t{QRELS_NEGATIVES[q]}\t0")
    return corpus, queries, "\n".join(lines) + "\n"


def build_nq():
    recs = []
    for n, (q, text, ans, gold, conflict, unans) in enumerate(QUESTIONS, start=1):
        ctxs = []
        for d, s in rank_docs(text, NQ_CTXS, ans, gold, conflict, unans, NQ_EXTRA_CTXS.get(q)):
            c = {"id": d, "title": DOCS[d]["title"], "text": DOCS[d]["text"], "score": round(60.0 + 1.5 * s, 2)}
            if n < NQ_NO_HASANSWER_FROM:
                c["hasanswer"] = has_answer(DOCS[d]["text"], ans)
            ctxs.append(c)
        rec = {"question": text, "answers": ans}
        if n <= NQ_EXAMPLE_ID_UPTO:
            rec["example_id"] = f"nq-{n}"
        rec["ctxs"] = ctxs
        recs.append(rec)
    return recs


def build_popqa():
    recs = []
    for i, (question, ans, subj, prop, gold, conflict, drop) in enumerate(POPQA):
        ctxs = [{"id": d, "title": DOCS[d]["title"], "text": DOCS[d]["text"], "score": f"{s:.4f}"}
                for d, s in rank_docs(question, POPQA_CTXS, ans, gold, conflict, drop)]
        recs.append({"id": POPQA_ID_BASE + i, "question": question, "answers": ans, "s_wiki_title": subj,
                     "prop": prop, "ctxs": ctxs})
    return recs


def kb_negatives(item, aliases, k):
    """Answer-free knowledge-base sentences: own passage first, then round-robin over the others."""
    def snippet(doc, sent):
        first = sent.split(" ", 1)[0]
        if first in ("It", "Its", "He", "His", "She", "Her", "They", "Their"):
            return f"{DOCS[doc]['title']} — {sent}"
        return sent

    own, others = item["docs"][0], item["docs"][1:]
    cands = [snippet(own, s) for s in sentences(DOCS[own]["text"])]
    per_doc = [[snippet(d, s) for s in sentences(DOCS[d]["text"])] for d in others]
    own_ok = [c for c in cands if not contains_alias(c, aliases)][:2]
    pool = list(own_ok)
    for i in range(max(len(p) for p in per_doc)):
        for p in per_doc:
            if i < len(p):
                pool.append(p[i])
    out = []
    for c in pool:
        if len(out) >= k:
            break
        if c not in out and not contains_alias(c, aliases) and len(c.split()) >= 6:
            out.append(c)
    return out


def rgb_answer_field(answer):
    """RGB's answer shape as its evalue.py checkanswer reads it: one entry per
    required part, each a string or a list of aliases. A flat list of
    aliases of one answer is therefore written as [[aliases]]."""
    if isinstance(answer, list) and all(isinstance(a, str) for a in answer):
        return [list(answer)]
    return answer


def build_rgb(items, english):
    recs = []
    for i, it in enumerate(items):
        aliases = answer_aliases(it["answer"])
        neg = kb_negatives(it, aliases, RGB_NEGATIVES) if english else list(it["negative"])
        rec = {"id": i, "query": it["query"], "answer": rgb_answer_field(it["answer"]), "positive": list(it["positive"]),
               "negative": neg}
        if "fake" in it:
            rec["fakeanswer"] = it["fake"]
            rec["positive_wrong"] = [replace_aliases(p, aliases, it["fake"]) for p in it["positive"]]
        recs.append(rec)
    return recs


# RGB's information-integration testbed (en_int.json): `positive` holds one
# list of passages per answer part; each part's passages hold only that part.
RGB_INT = [
    dict(query="Who were the two astronauts of Apollo 11 who walked on the Moon?",
         answer=[["Neil Armstrong", "Armstrong"], ["Buzz Aldrin", "Aldrin"]],
         positive=[["Neil Armstrong was the commander of Apollo 11 and the first person to walk on the Moon in July 1969.",
                    "The Apollo 11 commander, Neil Armstrong, stepped off the lunar module Eagle onto the surface."],
                   ["Buzz Aldrin, the lunar module pilot of Apollo 11, joined the commander on the surface.",
                    "Aldrin followed his commander down the ladder about twenty minutes later."]],
         negative=["Apollo 13 was the seventh crewed mission of the Apollo programme and did not land on the Moon.",
                   "The Saturn V rocket was used by NASA between 1967 and 1973.",
                   "Michael Collins stayed in lunar orbit aboard the command module Columbia."]),
    dict(query="Which two rivers meet at Khartoum to form the Nile?",
         answer=[["White Nile"], ["Blue Nile"]],
         positive=[["The White Nile flows north from the African Great Lakes region towards Khartoum."],
                   ["The Blue Nile rises at Lake Tana in Ethiopia and reaches Khartoum from the east.",
                    "Most of the Nile's water during the flood season comes from the Blue Nile."]],
         negative=["The Congo River is the second longest river in Africa.",
                   "Lake Victoria is the largest lake in Africa by area.",
                   "The Aswan High Dam was completed in 1970."]),
    dict(query="Who wrote Pride and Prejudice and who wrote Jane Eyre?",
         answer=[["Jane Austen", "Austen"], ["Charlotte Brontë", "Charlotte Bronte"]],
         positive=[["Pride and Prejudice is an 1813 novel of manners by Jane Austen."],
                   ["Jane Eyre is a novel by Charlotte Brontë, first published in 1847."]],
         negative=["Wuthering Heights was written by Emily Brontë.",
                   "Middlemarch was published in eight instalments in 1871 and 1872.",
                   "Charles Dickens wrote Great Expectations."]),
]


def build_rgb_int():
    return [{"id": i, "query": it["query"], "answer": it["answer"], "positive": it["positive"],
             "negative": it["negative"]} for i, it in enumerate(RGB_INT)]


def nomiracl_distribution(recs):
    """NoMIRACL's own per-language layout (the reference's data loader):
    corpus.jsonl ({docid, title, text}), topics/<split>.<subset>.tsv
    (qid<TAB>query) and qrels/<split>.<subset>.tsv (qid Q0 docid score),
    with the positive passages first, as the qrels are ordered there."""
    corpus, seen = [], set()
    topics = {"relevant": [], "non_relevant": []}
    qrels = {"relevant": [], "non_relevant": []}
    for r in recs:
        subset = "relevant" if r["positive_passages"] else "non_relevant"
        topics[subset].append(f"{r['query_id']}\t{r['query']}\n")
        for label, ps in ((1, r["positive_passages"]), (0, r["negative_passages"])):
            for p in ps:
                qrels[subset].append(f"{r['query_id']}\tQ0\t{p['docid']}\t{label}\n")
                if p["docid"] not in seen:
                    seen.add(p["docid"])
                    corpus.append({"docid": p["docid"], "title": p["title"], "text": p["text"]})
    return corpus, topics, qrels


def build_nomiracl(lang, passages, items):
    units = []   # (docid, doc, topic, title, text)
    for d, topic, title, text in passages:
        for k, ch in enumerate(chunks(text)):
            units.append((f"{lang}-{d}#{k}", d, topic, title, ch))
    by_id = {u[0]: u for u in units}
    bm = BM25([(u[0], u[3] + " " + u[4]) for u in units])
    recs = []
    for n, it in enumerate(items, start=1):
        sc = bm.scores(it["query"])
        pos = [by_id[f"{lang}-{p}"] for p in it["pos"]]
        cands = [u for u in units
                 if u[0] not in {p[0] for p in pos} and not has_answer(u[3] + " " + u[4], it["answers"])]
        cands.sort(key=lambda u: (u[2] != it["topic"], -sc[u[0]], u[0]))
        neg = cands[:NOMIRACL_PASSAGES - len(pos)]
        neg.sort(key=lambda u: (-sc[u[0]], u[0]))

        def p(u):
            return {"docid": u[0], "title": u[3], "text": u[4]}

        recs.append({"query_id": f"{lang}-{n}", "query": it["query"], "positive_passages": [p(u) for u in pos],
                     "negative_passages": [p(u) for u in neg]})
    return recs


def build_table():
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    w.writerow(["id", "question", "answers", "lang"])
    for tid, q, ans, lang in TABLE:
        w.writerow([tid, q, "|".join(ans), lang])
    rows = [{"qid": tid, "query": q, "gold": ans} for tid, q, ans, _lang in TABLE]
    return buf.getvalue(), rows


# ---------------------------------------------------------------------------
# Self-check
# ---------------------------------------------------------------------------

def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def unique(ids, what):
    seen = set()
    for i in ids:
        check(i not in seen, f"duplicate id in {what}: {i}")
        seen.add(i)


def self_check(corpus, queries, qrels, nq, popqa, rgb, rgb_zh, nomi_en, nomi_de, table_rows):
    notes = []
    unique([c["_id"] for c in corpus], "corpus")
    unique([q["_id"] for q in queries], "queries")
    for d in DOC_ORDER:
        n = len(DOCS[d]["text"].split())
        if d.startswith("d"):
            check(40 <= n <= 90, f"{d}: {n} words, want 40–90")
    # knowledge base: gold passages carry the first alias verbatim; conflicts carry no alias
    for q, _text, ans, gold, conflict, _u in QUESTIONS:
        check(ans[0] in DOCS[gold]["text"], f"{q}: first alias {ans[0]!r} not verbatim in {gold}")
        check(has_answer(DOCS[gold]["text"], ans), f"{q}: gold {gold} has no alias")
        if conflict:
            check(not has_answer(DOCS[conflict]["text"], ans), f"{q}: conflict {conflict} contains an alias")
            wrong = next(c[4] for c in CONFLICTS if c[0] == conflict)
            check(wrong in DOCS[conflict]["text"], f"{conflict}: wrong answer missing")
    for q, extra in NQ_EXTRA_CTXS.items():
        ans = next(x[2] for x in QUESTIONS if x[0] == q)
        check(has_answer(DOCS[extra]["text"], ans), f"extra ctx {extra} for {q} should match an alias")
    # qrels
    rows = [line.split("\t") for line in qrels.strip().split("\n")[1:]]
    unique([(r[0], r[1]) for r in rows], "qrels")
    for qid, did, s in rows:
        check(did in DOCS, f"qrels: unknown doc {did}")
        ans = next(x[2] for x in QUESTIONS if x[0] == qid)
        check(has_answer(DOCS[did]["text"], ans) == (s == "1"), f"qrels {qid} {did} grade disagrees with text")
    # nq
    disagree = 0
    for n, (rec, (q, _t, ans, gold, conflict, unans)) in enumerate(zip(nq, QUESTIONS), start=1):
        ctxs = rec["ctxs"]
        check(len(ctxs) == NQ_CTXS, f"{q}: {len(ctxs)} ctxs")
        unique([c["id"] for c in ctxs], f"{q} ctxs")
        scores = [c["score"] for c in ctxs]
        check(scores == sorted(scores, reverse=True), f"{q}: scores not descending")
        hits = [has_answer(c["text"], ans) for c in ctxs]
        for c, h in zip(ctxs, hits):
            if "hasanswer" in c:
                check(c["hasanswer"] == h, f"{q}: hasanswer mismatch on {c['id']}")
            check(("hasanswer" in c) == (n < NQ_NO_HASANSWER_FROM), f"{q}: hasanswer key presence")
            if naive_contains(c["text"], ans) != h:
                disagree += 1
                notes.append(f"nq {q} {c['id']}: substring match != token match")
        ids = [c["id"] for c in ctxs]
        if unans:
            check(not any(hits), f"{q}: unanswerable but a ctx has an alias")
        else:
            check(any(hits) and gold in ids, f"{q}: answerable but gold missing / no alias")
        if conflict:
            check(conflict in ids, f"{q}: conflict passage missing")
        check(not any(i in CONFLICT_IDS and i != conflict for i in ids), f"{q}: foreign conflict passage")
        check(("example_id" in rec) == (n <= NQ_EXAMPLE_ID_UPTO), f"{q}: example_id presence")
    # popqa
    unique([r["id"] for r in popqa], "popqa")
    for r, (_q, ans, _s, _p, gold, _c, drop) in zip(popqa, POPQA):
        check(len(r["ctxs"]) == POPQA_CTXS, "popqa ctx count")
        check(all(isinstance(c["score"], str) for c in r["ctxs"]), "popqa score must be str")
        fl = [float(c["score"]) for c in r["ctxs"]]
        check(fl == sorted(fl, reverse=True), "popqa scores not descending")
        hits = [has_answer(c["text"], ans) for c in r["ctxs"]]
        if drop:
            check(not any(hits), f"popqa {r['id']}: dropped gold but alias present")
        else:
            check(ans[0] in DOCS[gold]["text"] and any(hits), f"popqa {r['id']}: no answer in ctxs")
    # rgb
    for name, recs in (("rgb", rgb), ("rgb-zh", rgb_zh)):
        unique([r["id"] for r in recs], name)
        for r in recs:
            a = r["answer"]
            parts = [[x] if isinstance(x, str) else x for x in a] if isinstance(a, list) and a and \
                isinstance(a[0], list) else [answer_aliases(a)]
            aliases = answer_aliases(a)
            check(len(r["positive"]) == 3 and len(r["negative"]) == 4, f"{name} {r['id']}: snippet counts")
            for p in r["positive"]:
                for part in parts:
                    check(contains_alias(p, part), f"{name} {r['id']}: positive lacks {part[0]!r}: {p}")
            for ng in r["negative"]:
                check(not contains_alias(ng, aliases), f"{name} {r['id']}: negative has answer: {ng}")
            unique(r["positive"] + r["negative"], f"{name} {r['id']} snippets")
            check(("fakeanswer" in r) == ("positive_wrong" in r), f"{name} {r['id']}: fake/wrong pairing")
            if "fakeanswer" in r:
                for pw in r["positive_wrong"]:
                    check(not contains_alias(pw, aliases), f"{name} {r['id']}: positive_wrong keeps answer: {pw}")
                    check(r["fakeanswer"] in pw, f"{name} {r['id']}: positive_wrong lacks fake: {pw}")
    for r in rgb_zh:
        for s in [r["query"]] + r["positive"] + r["negative"]:
            check(" " not in s and is_cjk(s), f"rgb-zh {r['id']}: spaces or no CJK in {s!r}")
    # nomiracl
    for lang, recs, items in (("en", nomi_en, NOMIRACL_EN), ("de", nomi_de, NOMIRACL_DE)):
        unique([r["query_id"] for r in recs], f"nomiracl {lang}")
        for r, it in zip(recs, items):
            ps, ns = r["positive_passages"], r["negative_passages"]
            check(len(ps) + len(ns) == NOMIRACL_PASSAGES, f"nomiracl {r['query_id']}: {len(ps)}+{len(ns)}")
            check(len(ps) <= 2, f"nomiracl {r['query_id']}: too many positives")
            unique([p["docid"] for p in ps + ns], f"nomiracl {r['query_id']} passages")
            # title + text: a positive may name its subject only in the title
            for p in ps:
                check(has_answer(p["title"] + " " + p["text"], it["answers"]),
                      f"nomiracl {r['query_id']}: positive w/o answer")
            for p in ns:
                check(not has_answer(p["title"] + " " + p["text"], it["answers"]),
                      f"nomiracl {r['query_id']}: negative w/ answer")
    de_text = " ".join(t for *_x, t in DE_PASSAGES)
    check(all(ch in de_text for ch in "äöüß"), "German text lacks umlauts/ß")
    # table
    unique([r["qid"] for r in table_rows], "table")
    return notes


def dpr_tsv(corpus):
    """The BEIR corpus passages as DPR writes psgs_w100.tsv: a header row
    `id text title`, tab-separated, a field with quotes quoted and its
    quotes doubled."""
    import csv, io
    buf = io.StringIO()
    w = csv.writer(buf, delimiter="\t", quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
    w.writerow(["id", "text", "title"])
    for d in corpus:
        w.writerow([d["_id"], d["text"], d["title"]])
    return buf.getvalue()


# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------

def main():
    corpus, queries, qrels = build_beir()
    nq = build_nq()
    popqa = build_popqa()
    rgb = build_rgb(RGB, english=True)
    rgb_zh = build_rgb(RGB_ZH, english=False)
    nomi_en = build_nomiracl("en", [p for p in PASSAGES], NOMIRACL_EN)
    nomi_de = build_nomiracl("de", DE_PASSAGES, NOMIRACL_DE)
    table_csv, table_rows = build_table()
    rgb_int = build_rgb_int()
    nomi_corpus, nomi_topics, nomi_qrels = nomiracl_distribution(nomi_en)

    notes = self_check(corpus, queries, qrels, nq, popqa, rgb, rgb_zh, nomi_en, nomi_de, table_rows)

    nq_jsonl = jsonl(nq)
    files = [
        ("corpus/corpus.jsonl", jsonl(corpus), len(corpus)),
        ("corpus/queries.jsonl", jsonl(queries), len(queries)),
        ("corpus/qrels/test.tsv", qrels, qrels.count("\n") - 1),
        ("nq-mini.jsonl", nq_jsonl, len(nq)),
        ("nq-mini-array.json", json.dumps(nq[:10], ensure_ascii=False, indent=2) + "\n", 10),
        ("popqa-mini.jsonl", jsonl(popqa), len(popqa)),
        ("rgb-mini.jsonl", jsonl(rgb), len(rgb)),
        ("rgb-zh-mini.jsonl", jsonl(rgb_zh), len(rgb_zh)),
        ("rgb-int-mini.jsonl", jsonl(rgb_int), len(rgb_int)),
        ("nomiracl-dist/en/corpus.jsonl", jsonl(nomi_corpus), len(nomi_corpus)),
        ("nomiracl-dist/en/topics/dev.relevant.tsv", "".join(nomi_topics["relevant"]), len(nomi_topics["relevant"])),
        ("nomiracl-dist/en/topics/dev.non_relevant.tsv", "".join(nomi_topics["non_relevant"]), len(nomi_topics["non_relevant"])),
        ("nomiracl-dist/en/qrels/dev.relevant.tsv", "".join(nomi_qrels["relevant"]), len(nomi_qrels["relevant"])),
        ("nomiracl-dist/en/qrels/dev.non_relevant.tsv", "".join(nomi_qrels["non_relevant"]), len(nomi_qrels["non_relevant"])),
        ("nomiracl-mini/en.dev.jsonl", jsonl(nomi_en), len(nomi_en)),
        ("nomiracl-mini/de.dev.jsonl", jsonl(nomi_de), len(nomi_de)),
        ("table-mini.csv", table_csv, len(TABLE)),
        ("table-mini.jsonl", jsonl(table_rows), len(table_rows)),
        ("dpr-corpus-mini.tsv", dpr_tsv(corpus), len(corpus)),
    ]
    for rel, data, count in files:
        write_text(rel, data)
        print(f"{rel:32s} {count:4d} records")
    write_bytes("nq-mini.jsonl.gz", gzip.compress(nq_jsonl.encode("utf-8"), compresslevel=9, mtime=0))
    print(f"{'nq-mini.jsonl.gz':32s} {len(nq):4d} records")

    unans = [q for q, *_r, u in QUESTIONS if u]
    confl = [(q, c) for q, _t, _a, _g, c, _u in QUESTIONS if c]
    print("unanswerable:", " ".join(unans))
    print("conflicts:", " ".join(f"{q}->{c}" for q, c in confl))
    for n in notes:
        print("note:", n)
    print("self-check passed")


if __name__ == "__main__":
    sys.exit(main())
