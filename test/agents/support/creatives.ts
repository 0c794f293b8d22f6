/** A creative the sales agent's tests sync: a 300x250 display of the demo creative agent. */

/** The creative agent the test cores name as their format source. */
export const CREATIVE_AGENT_URL = 'http://127.0.0.1:3002';

export const displayCreative = (id: string) => ({
  creative_id: id,
  name: `Creative ${id}`,
  format_id: { agent_url: CREATIVE_AGENT_URL, id: 'display_300x250' },
  assets: {
    image: { asset_type: 'image', url: `https://cdn.example/${id}.png`, width: 300, height: 250 },
    click_url: { asset_type: 'url', url: 'https://acme.example' },
  },
});
