<?php
// Blade templates in resources/views, compiled once into storage/framework/views.
return [
    'paths' => [resource_path('views')],
    'compiled' => storage_path('framework/views'),
];
