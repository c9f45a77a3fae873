<?php
// Debian's php-laravel-framework puts the framework and its dependencies in /usr/share/php
// (on PHP's include_path) with one autoloader for all of them; this app has no vendor/ folder.
require_once 'Illuminate/autoload.php';

// The application's own classes: App\X\Y -> app/X/Y.php (PSR-4, as composer.json says).
spl_autoload_register(function (string $class): void {
    if (strncmp($class, 'App\\', 4) !== 0) {
        return;
    }
    $file = dirname(__DIR__) . '/app/' . str_replace('\\', '/', substr($class, 4)) . '.php';
    if (is_file($file)) {
        require $file;
    }
});
