<?php
// The site's set-up, without the web installer: WordPress's own functions install it and make its content
// (500 posts with fixed IDs 1001..1500 dated through 2024, two comments each, categories, a page, a menu
// and the journeys' 500 authors), in one transaction. Run when each web container starts (`setup` in
// app.toml), once its database is ready; a site already installed (a second web role on the same database)
// is left as it is.
$_SERVER['HTTP_HOST'] = '127.0.0.1';
$_SERVER['REQUEST_URI'] = '/';
define('WP_INSTALLING', true);
require '/usr/share/wordpress/wp-load.php';
// The install mails its admin by default: no mail here (nor a sendmail to hand it to).
function wp_new_blog_notification($blog_title, $blog_url, $user_id, $password)
{
}
require_once ABSPATH . 'wp-admin/includes/upgrade.php';

if (is_blog_installed()) {
    echo "loadcmp wordpress: the site is installed already\n";
    exit(0);
}
$started = microtime(true);
wp_install('loadcmp wordpress', 'admin', 'admin@example.invalid', false, '', wp_generate_password(24));
switch_theme('twentytwentyone');
update_option('posts_per_page', 10);
update_option('permalink_structure', '');

global $wpdb;
$wpdb->query('START TRANSACTION');
wp_defer_term_counting(true);
wp_defer_comment_counting(true);
mt_srand(26);
$words = explode(' ', 'apache nginx caddy lighttpd kestrel socket worker thread event prefork latency request '
    . 'server queue backlog memory process cache database query index table column mariadb connection timeout '
    . 'keepalive upstream fastcgi module config tunable sample second level client failure answer page');
$say = function (int $n) use ($words): string {
    $out = [];
    for ($k = 0; $k < $n; $k++) {
        $out[] = $words[mt_rand(0, count($words) - 1)];
    }
    return implode(' ', $out);
};
$categories = [];
foreach (['Servers', 'Databases', 'Load', 'Findings', 'Notes'] as $name) {
    $categories[] = wp_insert_term($name, 'category')['term_id'];
}
$start = strtotime('2024-01-01 08:00:00 UTC');
for ($i = 1; $i <= 500; $i++) {
    $paragraphs = [];
    for ($p = 0; $p < 5; $p++) {
        $paragraphs[] = '<!-- wp:paragraph --><p>' . ucfirst($say(60)) . '.</p><!-- /wp:paragraph -->';
    }
    $id = wp_insert_post([
        'import_id' => 1000 + $i,
        'post_title' => "loadcmp post $i",
        'post_content' => implode("\n\n", $paragraphs),
        'post_excerpt' => ucfirst($say(20)) . '.',
        'post_status' => 'publish',
        'post_author' => 1,
        'post_date' => gmdate('Y-m-d H:i:s', $start + $i * 17 * 3600),
        'post_category' => [$categories[$i % count($categories)]],
        'tags_input' => [$words[$i % count($words)], $words[($i * 7) % count($words)]],
    ], true);
    if (is_wp_error($id)) {
        fwrite(STDERR, "loadcmp wordpress: post $i: " . $id->get_error_message() . "\n");
        exit(1);
    }
    for ($c = 1; $c <= 2; $c++) {
        wp_insert_comment([
            'comment_post_ID' => $id,
            'comment_author' => "reader $c",
            'comment_author_email' => "reader$c@example.invalid",
            'comment_content' => ucfirst($say(30)) . '.',
            'comment_approved' => 1,
            'comment_date' => gmdate('Y-m-d H:i:s', $start + $i * 17 * 3600 + $c * 3600),
        ]);
    }
}
$about = wp_insert_post(['post_type' => 'page', 'post_title' => 'About loadcmp', 'post_status' => 'publish',
    'post_content' => '<p>A lab for web servers under load.</p>']);
$menu = wp_create_nav_menu('loadcmp menu');
wp_update_nav_menu_item($menu, 0, ['menu-item-title' => 'Home', 'menu-item-url' => home_url('/'),
    'menu-item-status' => 'publish']);
wp_update_nav_menu_item($menu, 0, ['menu-item-object' => 'page', 'menu-item-object-id' => $about,
    'menu-item-type' => 'post_type', 'menu-item-status' => 'publish']);
foreach (array_slice($categories, 0, 4) as $term) {
    wp_update_nav_menu_item($menu, 0, ['menu-item-object' => 'category', 'menu-item-object-id' => $term,
        'menu-item-type' => 'taxonomy', 'menu-item-status' => 'publish']);
}
set_theme_mod('nav_menu_locations', ['primary' => $menu]);
// The accounts the journey `author` logs in with (configs/apps/wordpress/journeys/author.toml): one per
// virtual user (`author{user}`), so that concurrent logins never rewrite one account's session list at once.
// Editors: their comments are approved at once and WordPress's comment flood check (one comment per 15 s
// from an address, and every client here is 127.0.0.1) leaves them alone, as it does a site's staff.
for ($u = 0; $u < 500; $u++) {
    $uid = wp_insert_user(['user_login' => "author$u", 'user_pass' => 'loadcmp', 'role' => 'editor',
        'user_email' => "author$u@example.invalid", 'display_name' => "author $u"]);
    if (is_wp_error($uid)) {
        fwrite(STDERR, "loadcmp wordpress: author$u: " . $uid->get_error_message() . "\n");
        exit(1);
    }
}
wp_defer_term_counting(false);
wp_defer_comment_counting(false);
$wpdb->query('COMMIT');
printf("loadcmp wordpress: installed with 500 posts, 1000 comments and 500 authors in %.1f s\n", microtime(true) - $started);
