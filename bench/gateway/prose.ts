/**
 * Ordinary English prose for the guardrail-cost measurement: sentences about gardens, bread,
 * rivers, trains and the like, shuffled by a seeded generator and cut at a sentence boundary, so
 * that the same size always gives the same bytes. No digits, no e-mail or web addresses, no
 * talk about the model or its instructions, nothing rough: nothing any guardrail should stop
 * (the bench asserts that every such request is answered 200).
 */

const sentences = [
  "The old garden behind the library was planted by a schoolteacher who loved roses and quiet afternoons.",
  "Every spring the neighbours gather to prune the apple trees and share tea from a large blue pot.",
  "A good loaf of bread needs patience more than skill, since the dough rises slowly in a cool kitchen.",
  "The river bends twice before it reaches the town, and herons wait in the shallows near the mill.",
  "Our train left the station a little late, but the conductor made up the time across the open plain.",
  "Many visitors come for the cathedral, yet the small market on the square is what they remember.",
  "She kept a notebook of the birds she saw each morning, with sketches of wings and careful notes.",
  "The museum reopened after a long renovation, and the new rooms are bright and easy to walk through.",
  "In the autumn the hills turn gold and red, and the paths fill with walkers in warm jackets.",
  "My grandfather repaired clocks in a narrow workshop that smelled of oil, brass and sawdust.",
  "The committee agreed to plant more trees along the avenue and to add benches near the fountain.",
  "A ferry crosses the lake every hour, carrying bicycles, baskets of vegetables and sleepy children.",
  "The recipe calls for ripe tomatoes, a handful of basil, good olive oil and a pinch of salt.",
  "When the snow melts, the stream behind the cottage grows loud enough to hear from the kitchen.",
  "The village choir practises on Thursday evenings and sings at the harvest festival each year.",
  "He learned to sail on a small wooden boat that his aunt had restored over several summers.",
  "The bakery on the corner sells warm rolls at dawn, and the queue often reaches the next door.",
  "Students crowded into the reading room, where the tall windows let in a soft northern light.",
  "The bridge was built of local stone, and its arches have carried carts, cars and cyclists alike.",
  "A quiet path leads from the harbour to the lighthouse, past meadows full of wild flowers.",
  "Our neighbours keep bees, and in late summer they leave jars of honey on the garden wall.",
  "The orchestra tuned their instruments while the audience settled into the velvet seats.",
  "Fresh coffee, a warm scarf and a good novel make a rainy afternoon feel like a small holiday.",
  "The farmer explained how the fields are rotated so that the soil stays rich from year to year.",
  "Along the canal, painted boats are moored in a long row, each with pots of herbs on its roof.",
  "The children built a kite from paper and thin sticks and flew it on the windy hill above town.",
  "At the edge of the forest there is a small chapel where travellers once stopped to rest.",
  "The tailor measured the sleeves twice, chalked the cloth and cut it with long, steady strokes.",
  "A gentle rain fell through the night, and by morning the garden smelled of earth and leaves.",
  "The library lends seeds as well as books, so readers can grow beans, peas and sunflowers.",
  "The potter shaped the clay on a turning wheel, lifting the walls of the bowl with wet hands.",
  "On market days the square is filled with cheese, olives, bread, flowers and the sound of talk.",
  "The mountain hut serves thick soup and dark bread to walkers who arrive tired and happy.",
  "Her first garden was a single window box, with mint, parsley and a stubborn little lemon tree.",
  "The town council restored the old railway station and turned it into a cafe and a gallery.",
  "A family of ducks crossed the lane slowly, and everyone waited with a smile until they passed.",
  "The guidebook suggests a morning walk through the old quarter before the streets grow busy.",
  "In winter the lake freezes near the shore, and skaters trace long circles on the smooth ice.",
  "The carpenter chose oak for the table because it is strong, handsome and ages with grace.",
  "We spent the evening sorting old photographs and telling stories about summers by the sea.",
  "The botanical garden has a glass house where orchids and ferns grow in warm, damp air.",
  "Each chapter of the novel follows a different member of the family through one long summer.",
  "The weaver showed us how the pattern is planned row by row before the loom is threaded.",
  "Lanterns were hung along the harbour wall for the festival, and music drifted over the water.",
  "A small museum in the valley tells the story of the wool trade and the people who worked it.",
  "The path climbs gently through pine woods and opens onto a meadow with a view of the coast.",
  "Our reading group meets in the back room of the bookshop, where the chairs are old and soft.",
  "The gardener recommends planting garlic in the autumn and harvesting it in early summer.",
];

/** A small seeded generator (mulberry32): the same seed, the same sequence, on every machine. */
function generator(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/**
 * Prose of at most `bytes` bytes and within one sentence of it: paragraphs of four to six
 * sentences, the sentence pool shuffled afresh each time it runs out.
 */
export function prose(bytes: number, seed = 20261121): string {
  const random = generator(seed);
  const pool: string[] = [];
  const next = (): string => {
    if (pool.length === 0) {
      pool.push(...sentences);
      for (let i = pool.length - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1));
        [pool[i], pool[j]] = [pool[j], pool[i]];
      }
    }
    return pool.pop() ?? "";
  };
  let text = "";
  let inParagraph = 0;
  let paragraphLength = 4 + Math.floor(random() * 3);
  for (;;) {
    const sentence = next();
    const separator = text === "" ? "" : inParagraph === 0 ? "\n\n" : " ";
    if (Buffer.byteLength(text + separator + sentence) > bytes) return text;
    text += separator + sentence;
    if (++inParagraph === paragraphLength) {
      inParagraph = 0;
      paragraphLength = 4 + Math.floor(random() * 3);
    }
  }
}
