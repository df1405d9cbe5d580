<?php
// One request of the threaded PHP workload (host.c): what a small web application does to answer
// a page — build nested data with floats and encode it as JSON, format numbers and strings with
// sprintf, match and rewrite text with preg_*, sort, walk an object graph, render a template.
// $request_id is set by the host; the page ends with </html>, which the host checks.
$id = isset($request_id) ? (int)$request_id : 0;
mt_srand($id);

// 1. Nested arrays with floats; JSON out and back in.
$orders = [];
for ($i = 0; $i < 40; $i++) {
    $items = [];
    $n_items = mt_rand(2, 6);
    for ($k = 0; $k < $n_items; $k++) {
        $items[] = [
            'sku' => sprintf('SKU-%05d', mt_rand(0, 99999)),
            'qty' => mt_rand(1, 9),
            'price' => mt_rand(100, 99999) / 100,
            'weight' => mt_rand(1, 5000) / 1000,
            'tags' => ['new' => (bool)mt_rand(0, 1), 'ratio' => mt_rand() / mt_getrandmax()],
        ];
    }
    $total = 0.0;
    foreach ($items as $it) $total += $it['qty'] * $it['price'];
    $orders[] = [
        'id' => $id * 1000 + $i,
        'customer' => 'customer' . mt_rand(1, 500),
        'items' => $items,
        'total' => $total,
        'tax' => round($total * 0.19, 2),
        'geo' => ['lat' => mt_rand(-90000, 90000) / 1000, 'lon' => mt_rand(-180000, 180000) / 1000],
    ];
}
$json = json_encode(['request' => $id, 'orders' => $orders]);
$decoded = json_decode($json, true);
$back = $decoded['orders'];

// 2. Number and string formatting.
$lines = [];
foreach ($back as $o) {
    $lines[] = sprintf('%-12s %10.2f %8.3f %05.2f%% %s', $o['customer'], $o['total'], $o['tax'],
                       $o['tax'] / max($o['total'], 0.01) * 100, number_format($o['total'], 2, '.', ','));
}
$report = implode("\n", $lines);

// 3. Regular expressions.
preg_match_all('/customer(\d+)\s+([\d.]+)/', $report, $m);
$customers = array_map('intval', $m[1]);
$squeezed = preg_replace('/\s+/', ' ', $report);
$words = preg_split('/[\s,]+/', $squeezed, -1, PREG_SPLIT_NO_EMPTY);
$skus = preg_replace_callback('/SKU-(\d+)/', fn($mm) => 'sku' . ((int)$mm[1] % 97), $json);

// 4. Sorting.
usort($back, fn($a, $b) => $b['total'] <=> $a['total']);
$names = array_column($back, 'customer');
sort($names, SORT_STRING);
$unique = array_unique($names);
$by_customer = [];
foreach ($back as $o) $by_customer[$o['customer']][] = $o['total'];
ksort($by_customer);
arsort($customers);

// 5. An object graph: a category tree with products, summed and serialized.
class Category {
    public array $children = [];
    public array $products = [];
    public function __construct(public string $name, public float $discount) {}
    public function add(Category $c): Category { $this->children[] = $c; return $c; }
    public function value(): float {
        $v = 0.0;
        foreach ($this->products as $p) $v += $p->price * (1 - $this->discount);
        foreach ($this->children as $c) $v += $c->value();
        return $v;
    }
}
class Product {
    public function __construct(public string $sku, public float $price) {}
}
function build_tree(Category $parent, int $depth, int &$counter): void {
    if ($depth === 0) return;
    for ($i = 0; $i < 3; $i++) {
        $c = $parent->add(new Category($parent->name . '/' . $i, mt_rand(0, 30) / 100));
        for ($k = 0; $k < 3; $k++) $c->products[] = new Product('p' . $counter++, mt_rand(100, 50000) / 100);
        build_tree($c, $depth - 1, $counter);
    }
}
$root = new Category('root', 0.0);
$counter = 0;
build_tree($root, 4, $counter);
$tree_value = $root->value();
$serialized = serialize($root);
$copy = unserialize($serialized);

// 6. A template render.
$row = '<tr><td>{{id}}</td><td>{{customer}}</td><td class="n">{{total}}</td><td class="n">{{tax}}</td></tr>';
$rows = '';
foreach (array_slice($back, 0, 25) as $o) {
    $rows .= strtr($row, [
        '{{id}}' => (string)$o['id'],
        '{{customer}}' => htmlspecialchars($o['customer'], ENT_QUOTES),
        '{{total}}' => sprintf('%.2f', $o['total']),
        '{{tax}}' => sprintf('%.2f', $o['tax']),
    ]);
}
ob_start();
?>
<!doctype html>
<html><head><title>Orders <?= $id ?></title></head>
<body>
<h1>Orders of request <?= $id ?></h1>
<p><?= count($back) ?> orders, <?= count($unique) ?> customers, catalogue value <?= sprintf('%.2f', $tree_value) ?>
 (<?= strlen($serialized) ?> bytes serialized, <?= count($words) ?> words, <?= strlen($skus) ?> bytes of JSON)</p>
<table><?= $rows ?></table>
<pre><?= htmlspecialchars(substr($report, 0, 400)) ?></pre>
</body>
</html>
<?php
echo ob_get_clean();
