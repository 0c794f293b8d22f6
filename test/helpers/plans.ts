/**
 * Plan checks on partitioned tables (sender/outbox/partitions.ts): a partition that is
 * empty (the days created ahead) is read with a free sequential scan, and sorted if the
 * plan merges partitions in order; neither reads any row. Those lines, and a Merge
 * Append's sort key (it merges ordered index reads, it sorts nothing), are dropped before
 * a test looks for scans and sorts of the tables that hold rows.
 */
export function withoutEmptyPartitions(plan: string): string {
  const lines = plan.split('\n');
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    // A Merge Append merges the partitions' index reads in order: no sort of rows.
    if (/^\s*Sort Key:/.test(line) && /Merge Append/.test(lines[i - 1] ?? '')) continue;
    const empty =
      /(Seq Scan|Sort|Index Scan|Index Only Scan|Bitmap Heap Scan) .*\(cost=0\.00\.\.0\.0\d /.test(
        line,
      );
    const cheapSort = /->\s+Sort\s+\(cost=0\.0\d\.\.0\.0\d /.test(line);
    if (!empty && !cheapSort) {
      out.push(line);
      continue;
    }
    // Skip the node and its details (deeper-indented lines).
    const indent = line.search(/\S/);
    while (i + 1 < lines.length && lines[i + 1]!.search(/\S/) > indent) i++;
  }
  return out.join('\n');
}
